// The empty source of fusion_pch (cmake/FusionPrecompiledHeaders.cmake):
// the target exists to compile the precompiled headers once.
