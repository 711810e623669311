// The same hazard through a type alias, with a comment inside the brackets.
!idx = index
!alias = !idx
module attributes {fusion.x = array< // the element type:
    !alias: 1>} {
}
