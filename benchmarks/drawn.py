"""The kernel benchmark's packs with lognormal latencies: a draw from the tool's stream on every
call, as synthesized tools make (``kernel.PACK`` and ``kernel.MIX_PACK`` answer after a constant
latency and so draw nothing). Imported by ``trees.py`` (in either tree's interpreter, beside that
tree's own ``kernel``) and ``streams.py``; it changes no ``sys.path``.
"""

from __future__ import annotations

from kernel import MIX_ENTITIES, Customer, _mix_seed, _seed

from simforge.tools import LogNormal, Pack, crud_tools
from simforge.world import EntitySchema

DRAWN = LogNormal(median=0.05, sigma=0.5)
DRAWN_PACK = Pack(name="bench-drawn", description="reads with drawn latencies",
                  entities=[Customer], seed=_seed,
                  tools=crud_tools(EntitySchema.of(Customer), read_latency=DRAWN, capacity=64))
DRAWN_MIX = Pack(name="bench-mix-drawn", description="the mix with drawn latencies",
                 entities=MIX_ENTITIES, seed=_mix_seed,
                 tools=[t for cls in MIX_ENTITIES
                        for t in crud_tools(EntitySchema.of(cls), ops=("get", "update"),
                                            read_latency=DRAWN, write_latency=DRAWN,
                                            capacity=64)])
