module attributes {fusion.target = #fusion.target<"sm_90a">} {
}
