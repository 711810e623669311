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


def library_path(artifacts, name, variant):
    """ARTIFACTS/layers/lib<name>.so (fused) or lib<name>_unfused.so."""
    suffix = "" if variant == "fused" else "_unfused"
    return os.path.join(artifacts, "layers", f"lib{name}{suffix}.so")
