"""Write a catalogue entry's `probe` (the model self-check's reference vectors) from a model's
reference build.

    python -m recallmesh.services.embedding.make_probe --reference MANIFEST --entry ENTRY.json
        [--texts-from OTHER_ENTRY.json]

Embeds the probe texts (the entry's own, else --texts-from's, else the default model's entry's)
with the model MANIFEST describes (its fp32 build: the reference an int8 build is checked
against) on the CPU and writes them, float16 in base64, into ENTRY.json's "probe". `recallmesh
fetch-model` copies it into the manifest it writes; the embedding service checks it at start
(core.check_probe).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from recallmesh.embedding_models.manifest import DEFAULT_MODEL, ModelManifest
from recallmesh.services.embedding.core import OnnxEmbedder, make_probe

CATALOGUE = Path(__file__).resolve().parents[2] / "embedding_models" / "catalogue"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m recallmesh.services.embedding.make_probe",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--reference", type=Path, required=True, help="the reference manifest")
    parser.add_argument("--entry", type=Path, required=True, help="the catalogue entry to write")
    parser.add_argument("--texts-from", type=Path, default=CATALOGUE / f"{DEFAULT_MODEL}.json")
    args = parser.parse_args(argv)
    entry = json.loads(args.entry.read_text())
    source = entry if "probe" in entry else json.loads(args.texts_from.read_text())
    probe = source["probe"]
    embedder = OnnxEmbedder(ModelManifest.load(args.reference), provider="cpu")
    entry["probe"] = make_probe(embedder.embed, list(probe["texts"]), probe.get("kind",
                                                                               "document"))
    args.entry.write_text(json.dumps(entry, indent=2, ensure_ascii=False) + "\n")
    print(f"{args.entry}: probe of {len(probe['texts'])} texts from {args.reference}")


if __name__ == "__main__":
    main()
