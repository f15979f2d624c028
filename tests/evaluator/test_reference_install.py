"""A finished reference run moves into its content-keyed cache folder without ever removing a
complete one: another cuco process sharing the cache may have put the same data there and be
reading it (two `cuco evolve` runs on the default cache, or two test workers)."""

from pathlib import Path

from evaluator.reference import install


def _run_data(folder: Path, world: int, tag: str) -> Path:
    folder.mkdir(parents=True)
    for r in range(world):
        (folder / f"index_r{r}.json").write_text(f'["{tag}"]')
    return folder


def test_finished_data_moves_into_an_absent_folder(tmp_path):
    tmp = _run_data(tmp_path / "ref.tmp1", 2, "new")
    install(tmp, tmp_path / "ref", 2)
    assert (tmp_path / "ref" / "index_r1.json").read_text() == '["new"]' and not tmp.exists()


def test_a_complete_folder_another_process_installed_is_kept_untouched(tmp_path):
    theirs = _run_data(tmp_path / "ref", 2, "theirs")
    inode = (theirs / "index_r0.json").stat().st_ino
    tmp = _run_data(tmp_path / "ref.tmp2", 2, "mine")
    install(tmp, theirs, 2)
    assert (theirs / "index_r0.json").stat().st_ino == inode  # the very file a reader may hold open
    assert (theirs / "index_r0.json").read_text() == '["theirs"]' and not tmp.exists()


def test_an_incomplete_leftover_is_replaced(tmp_path):
    stale = _run_data(tmp_path / "ref", 1, "old")  # only rank 0 of a world of 2
    tmp = _run_data(tmp_path / "ref.tmp3", 2, "new")
    install(tmp, stale, 2)
    assert (stale / "index_r1.json").read_text() == '["new"]'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ref"]
