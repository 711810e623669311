"""The layer programs' manifest and library paths (no torch needed)."""
import json
import os

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def artifacts_dir():
    return os.environ.get("FUSION_GPU_ARTIFACTS", os.path.join(REPO, "build", "gpu"))


def load_manifest(artifacts):
    """{name: program} from ARTIFACTS/layers/layers.json, or None if absent."""
    path = os.path.join(artifacts, "layers", "layers.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return {p["name"]: p for p in json.load(f)}


def variant_suffix(variant):
    """The library's and its function's suffix: "" (fused), "_unfused",
    "_lazyln" (fusion-compile --lazy-layer-norm)."""
    return "" if variant == "fused" else "_" + variant


def library_path(artifacts, name, variant):
    """ARTIFACTS/layers/lib<name>.so (fused), lib<name>_unfused.so or
    lib<name>_lazyln.so."""
    suffix = variant_suffix(variant)
    return os.path.join(artifacts, "layers", f"lib{name}{suffix}.so")
