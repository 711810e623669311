// The same hazard through a type alias, with a comment inside the brackets.
!idx = index
!alias = !idx
module attributes {fusion.x = array< // the element type:
    !alias: 1>} {
}
// test/fuzz/regressions-diagnostics.test runs fusion-opt on this file and
// checks its error against the line below (the element type's alias, on
// line 5), and that Debian's mlir-opt still crashes on it.
// GUARD-ARRAY-ALIAS: dense-array-index-alias.mlir:5:5: error: a dense array of index elements (array<index: ...>) is refused before parsing
