"""The pack files are validated when a pack is read: a misfit names the file, the line of
``pack.yaml`` and the field path."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
import yaml

from simforge.synth.pack.files import MANIFEST, TOOLS, PackFormatError
from simforge.synth.pack.loader import load_synth_pack
from simforge.synth.pack.models import Manifest, ToolEntry


def test_a_written_pack_fits_its_models(shop_pack: Path):
    manifest = yaml.safe_load((shop_pack / MANIFEST).read_text())
    Manifest.model_validate(manifest)
    for entry in orjson.loads((shop_pack / TOOLS).read_bytes()):
        ToolEntry.model_validate(entry)
    assert load_synth_pack(shop_pack).tools


def test_a_tool_without_a_handler_kind_names_the_entry(shop_pack: Path):
    tools = orjson.loads((shop_pack / TOOLS).read_bytes())
    del tools[1]["handler"]["kind"]
    (shop_pack / TOOLS).write_bytes(orjson.dumps(tools))
    with pytest.raises(PackFormatError, match=r"tools\.json: \[1\]\.handler\.kind: Field required"):
        load_synth_pack(shop_pack)


def test_an_entity_without_a_primary_key_names_its_line(shop_pack: Path):
    manifest = yaml.safe_load((shop_pack / MANIFEST).read_text())
    entity = next(iter(manifest["entities"]))
    del manifest["entities"][entity]["pk"]
    (shop_pack / MANIFEST).write_text(yaml.safe_dump(manifest, sort_keys=False))
    with pytest.raises(PackFormatError) as caught:
        load_synth_pack(shop_pack)
    message = str(caught.value)
    assert "pack.yaml: line " in message and f"entities.{entity}.pk: Field required" in message


def test_a_manifest_without_file_names_fails_at_load(shop_pack: Path):
    manifest = yaml.safe_load((shop_pack / MANIFEST).read_text())
    del manifest["files"]["world"]
    (shop_pack / MANIFEST).write_text(yaml.safe_dump(manifest, sort_keys=False))
    with pytest.raises(PackFormatError, match=r"files\.world: Field required"):
        load_synth_pack(shop_pack)
