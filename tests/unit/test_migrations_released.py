"""Released migrations never change: a database records each applied migration's checksum
and refuses to start when a file differs ("changed after it was applied"), so editing even a
comment in one locks every existing deployment out. New schema goes in a new file."""

from __future__ import annotations

from recallmesh.migrations import discover

# sha256 of each migration as released (applied by every database made since).
RELEASED = {
    1: "7110790f4cbbe0b1fda23c4864d600303c823d5f0a8b9f8991c16e8a7dd77f9b",
    2: "48cf65993a74c17bdf541455a39ea393e25efec9066ee3038fa47dee22d410e6",
    3: "3e71e5ad7f7892b25645251f3d3062f555cf4cad3f84fd7c4b2fedb51aad5ecb",
    4: "0eeeffc4b1ae3a400310740cf44a29fbed3d7f23bdcbf5316399d043ecdf901e",
    5: "85209503c9c54affb55d936fa909931f68e909ce2607780b5218577e120f05c1",
    6: "24621e54c08976a8cb8a3f1b679d156b845698b073785188dd8e2fc37e912d1b",
    7: "c360d279687de60d21336061eb83164d10b0d92b8329999e7de4ccd6b08e4858",
    8: "ac9b900b70b5605f51ff372bd5f446893e4f28b56b50a9b2b03def969767b1a3",
    9: "ea70a5666ede2dcf386798bf76a06eb75c8a016af7dc5aba8d4832fd83ad62d0",
    10: "ed88ec9a657525e3a230af28c1d3cca1c63da77c0478a4a6d39ede4c61835cd7",
    11: "d56c1b10dff8430ed86aafe55f1b3110ea29092790a6f88dca513f69af73be0b",
    12: "626c65f7d5e076601c97679f1cc9ffa0fa98a61eb6d9c0447785af84728da066",
}


def test_released_migrations_are_unchanged() -> None:
    found = {m.version: m.checksum for m in discover()}
    changed = {v: f"{found.get(v)} (released {sha})" for v, sha in RELEASED.items()
               if found.get(v) != sha}
    assert not changed, f"released migrations edited; add a new migration instead: {changed}"
