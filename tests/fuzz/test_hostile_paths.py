"""Hostile paths over the commands (issue #36): outputs that are symlinks, character devices, FIFOs, folders or
on a full disk; inputs that are unreadable, special or missing; options that need each other. Every device node
is one the test makes in its own folder (a copy of /dev/null's or /dev/full's numbers), never a system device.

Writes: a symlink is written through (the link kept), a device or FIFO written in place (never replaced by a
regular file), a full disk or a refused permission one line naming the path, exit 1, no temporary file left.
Reads: one shared check before any work (one line naming the file, exit 1).
"""

from __future__ import annotations

import errno
import os
import shutil
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from modelseek import GroundTruth, Run
from modelseek.core.errors import OutputError
from modelseek.core.io import atomic_write_bytes, atomic_write_text
from modelseek.testing.cli import assert_one_error_line, run_cli, run_cli_subprocess

SRC = str(Path(__file__).resolve().parents[2] / "src")


# ------------------------------------------------------------------------------------------ helpers
def _device(path: Path, like: str) -> Path:
    """A character device node at ``path`` with the numbers of ``like`` (made here; the system's is only stat'ed).
    Skipped, saying why, where ``like`` is not a character device (some containers bind a regular file there) or
    where the node made cannot be opened (a file system mounted ``nodev``)."""
    found = os.stat(like)
    if not stat.S_ISCHR(found.st_mode):
        pytest.skip(f"{like} is not a character device on this machine (a {stat.filemode(found.st_mode)[0]!r} "
                    f"entry): there is no device to copy")
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, found.st_rdev)
    except PermissionError:
        pytest.skip("making a device node needs root (CAP_MKNOD)")
    try:
        with open(path, "wb"):
            pass
    except OSError as exc:
        path.unlink()
        pytest.skip(f"a device node made in {path.parent} cannot be opened here ({exc.strerror}; a file system "
                    f"mounted nodev?)")
    return path


def _null(tmp_path: Path) -> Path:
    return _device(tmp_path / "my-null", "/dev/null")


def _full(tmp_path: Path) -> Path:
    """A device whose every write fails with ENOSPC (the numbers of /dev/full)."""
    return _device(tmp_path / "my-full", "/dev/full")


class _FifoReader:
    """A FIFO at ``path`` and a thread reading it to the end."""

    def __init__(self, path: Path) -> None:
        os.mkfifo(path)
        self.path, self.data = path, b""
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        with open(self.path, "rb") as fh:
            self.data = fh.read()

    def join(self) -> bytes:
        self.thread.join(timeout=60)
        assert not self.thread.is_alive()
        return self.data


def _temp_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


@pytest.fixture
def tmpfs(tmp_path):
    """A 64 KiB tmpfs mounted in the test's folder (a real full disk); skipped where mounting is not allowed."""
    mnt = tmp_path / "tmpfs"
    mnt.mkdir()
    if shutil.which("mount") is None or os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root and mount(8)")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], capture_output=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.decode().strip()}")
    try:
        yield mnt
    finally:
        r = subprocess.run(["umount", str(mnt)], capture_output=True)
        if r.returncode != 0:  # something still holds a file there (a leak of the code under test): say so
            subprocess.run(["umount", "-l", str(mnt)], check=False)
            pytest.fail(f"the tmpfs was still busy after the test: {r.stderr.decode().strip()}")


def _fill(folder: Path, leave: int = 8192) -> None:
    """Fill ``folder``'s file system, then free ``leave`` bytes: room for a small file, not for a large one."""
    fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC
    finally:
        os.close(fd)
    os.truncate(folder / "filler", max(0, os.path.getsize(folder / "filler") - leave))


@pytest.fixture
def enospc(monkeypatch):
    """Every fsync fails as on a full disk (injected in this process)."""

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    from modelseek.testing import make_ntcir_layout

    root = tmp_path_factory.mktemp("hostile")
    layout = make_ntcir_layout(root / "ntcir", n_tasks=12, n_models=6, seed=0)
    truth = GroundTruth.from_csv(layout / "ground-truth.csv")
    Run.from_scores({t: truth.f1(t) for t in truth.task_ids}, run_id="a").write(root / "a.txt")
    Run.from_scores({t: {m: -v for m, v in truth.f1(t).items()} for t in truth.task_ids}, run_id="b").write(
        root / "b.txt")
    rng = np.random.default_rng(0)
    (root / "table.csv").write_text("model,benchmark,metric,value\n" + "".join(
        f"m{i},b{j},acc,{rng.normal():.4f}\n" for i in range(10) for j in range(4)))
    return {"root": root, "layout": layout, "truth": layout / "ground-truth.csv", "a": root / "a.txt",
            "b": root / "b.txt", "table": root / "table.csv"}


def _writer(case, kind: str, out: Path) -> list:
    """The command line of ``kind`` that writes ``out``."""
    return {"fuse": ["fuse", case["a"], case["b"], "-o", out],
            "rank": ["rank", case["layout"], "-m", "avgrank", "--train-truth", case["truth"], "--json", "-o", out],
            "structure": ["structure", case["truth"], "--permutations", "20", "--no-tiers", "--plot", out],
            "eevee": ["eevee", "importance", "--table", case["table"], "--subset", "b1,b2", "--meta-model", "ridge",
                      "--workers", "1", "--plot", out]}[kind]


def _written(kind: str, data: bytes) -> bool:
    return data.startswith(b"\x89PNG") if kind in ("structure", "eevee") else b" Q0 " in data


WRITERS = ["fuse", "rank", "structure", "eevee"]


# ------------------------------------------------------------------------------------------ the write path (API)
def test_a_regular_file_is_replaced_atomically_keeping_its_mode(tmp_path):
    p = tmp_path / "out.txt"
    p.write_text("old\n")
    os.chmod(p, 0o640)
    before = p.stat().st_ino
    atomic_write_text(p, "new\n")
    assert p.read_text() == "new\n" and stat.S_IMODE(p.stat().st_mode) == 0o640
    assert p.stat().st_ino != before  # replaced, not rewritten in place: a reader never sees half a file
    assert _temp_files(tmp_path) == []


def test_a_symlink_is_written_through_and_kept(tmp_path):
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "target.txt"
    target.write_text("old\n")
    os.chmod(target, 0o600)
    link = tmp_path / "link.txt"
    link.symlink_to(Path("real") / "target.txt")  # relative, as users make them
    atomic_write_text(link, "new\n")
    assert link.is_symlink() and os.readlink(link) == str(Path("real") / "target.txt")
    assert target.read_text() == "new\n" and stat.S_IMODE(target.stat().st_mode) == 0o600
    dangling = tmp_path / "dangling.txt"
    dangling.symlink_to(tmp_path / "real" / "new.txt")
    atomic_write_text(dangling, "made\n")  # a link to a file not yet there: the file is made where it points
    assert dangling.is_symlink() and (tmp_path / "real" / "new.txt").read_text() == "made\n"
    assert _temp_files(tmp_path) == [] == _temp_files(tmp_path / "real")


def test_a_character_device_is_written_in_place_and_stays_a_device(tmp_path):
    null = _null(tmp_path)
    rdev = null.stat().st_rdev
    atomic_write_bytes(null, b"x" * 100_000)
    assert stat.S_ISCHR(null.stat().st_mode) and null.stat().st_rdev == rdev
    full = _full(tmp_path)
    with pytest.raises(OutputError) as exc:
        atomic_write_bytes(full, b"x")
    assert str(exc.value) == f"{full}: cannot write: no space left on device (the disk is full)"
    assert exc.value.errno == errno.ENOSPC and stat.S_ISCHR(full.stat().st_mode)
    assert _temp_files(tmp_path) == []


def test_a_fifo_is_written_in_place(tmp_path):
    reader = _FifoReader(tmp_path / "pipe")
    atomic_write_text(reader.path, "through the pipe\n")
    assert reader.join() == b"through the pipe\n" and stat.S_ISFIFO(reader.path.stat().st_mode)


def test_a_fifo_nobody_reads_is_an_error_not_a_hang(tmp_path, monkeypatch):
    import time

    import modelseek.core.io as msio

    monkeypatch.setattr(msio, "FIFO_WAIT_S", 0.3)
    os.mkfifo(tmp_path / "pipe")
    start = time.monotonic()
    with pytest.raises(OutputError, match=r"pipe: cannot write: no process opened the FIFO for reading within 0\.3 s"):
        atomic_write_text(tmp_path / "pipe", "x")
    assert time.monotonic() - start < 30 and stat.S_ISFIFO((tmp_path / "pipe").stat().st_mode)


def test_what_cannot_be_written_is_one_located_error(tmp_path):
    (tmp_path / "folder").mkdir()
    (tmp_path / "file").write_text("x")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / "sock"))
    try:
        cases = {tmp_path / "folder": "is a directory, expected a file to write",
                 tmp_path / "sock": "is a socket; refusing to write to it",
                 tmp_path / "file" / "x": "is not a directory"}
        if os.geteuid() == 0:
            os.mknod(tmp_path / "blk", stat.S_IFBLK | 0o600, os.makedev(7, 200))  # never opened
            cases[tmp_path / "blk"] = "is a block device; refusing to write to it"
        for path, words in cases.items():
            with pytest.raises(OutputError) as exc:
                atomic_write_text(path, "x")
            assert str(exc.value).startswith(str(path)) and words in str(exc.value), exc.value
            assert "\n" not in str(exc.value)
    finally:
        sock.close()
    assert _temp_files(tmp_path) == []


def test_a_full_disk_leaves_the_old_file_and_no_temporary_file(tmp_path, enospc):
    p = tmp_path / "out.txt"
    p.write_text("old\n")
    with pytest.raises(OutputError, match=r"out\.txt: cannot write: no space left on device \(the disk is full\)"):
        atomic_write_text(p, "new\n")
    assert p.read_text() == "old\n" and _temp_files(tmp_path) == []


def test_a_refused_permission_is_named(tmp_path, monkeypatch):
    import tempfile

    def refused(*a, **k):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))

    monkeypatch.setattr(tempfile, "mkstemp", refused)
    with pytest.raises(OutputError, match=r"out\.txt: cannot write: permission denied$"):
        atomic_write_text(tmp_path / "out.txt", "x")


def test_a_real_full_disk_on_a_tmpfs(tmpfs):
    small = tmpfs / "small.txt"
    small.write_text("old\n")
    _fill(tmpfs)
    with pytest.raises(OutputError, match="no space left on device") as exc:
        atomic_write_bytes(small, b"y" * 200_000)
    assert exc.value.errno == errno.ENOSPC
    assert small.read_text() == "old\n" and _temp_files(tmpfs) == []
    subprocess.run(["mount", "-o", "remount,ro", str(tmpfs)], check=True)
    with pytest.raises(OutputError, match=r"small\.txt: cannot write: read-only file system"):
        atomic_write_text(small, "z")


# ------------------------------------------------------------------------------------------ the write path (CLI)
@pytest.mark.parametrize("kind", WRITERS)
def test_cli_output_through_a_symlink(case, tmp_path, kind):
    target = tmp_path / "target.out"
    target.write_text("old\n")
    link = tmp_path / "link.out"
    link.symlink_to(target)
    r = run_cli(*_writer(case, kind, link))
    assert r.code == 0, r.err
    assert link.is_symlink() and os.readlink(link) == str(target) and _written(kind, target.read_bytes())


@pytest.mark.parametrize("kind", WRITERS)
def test_cli_output_to_a_device_or_fifo(case, tmp_path, kind):
    null = _null(tmp_path)
    r = run_cli(*_writer(case, kind, null))
    assert r.code == 0, r.err
    assert stat.S_ISCHR(null.stat().st_mode)  # the device is still a device (was replaced by a regular file)
    reader = _FifoReader(tmp_path / "pipe")
    r = run_cli(*_writer(case, kind, reader.path))
    assert r.code == 0, r.err
    assert _written(kind, reader.join()) and stat.S_ISFIFO(reader.path.stat().st_mode)
    full = _full(tmp_path)
    r = run_cli(*_writer(case, kind, full))
    assert_one_error_line(r, str(full), "no space left on device (the disk is full)")
    assert _temp_files(tmp_path) == []


@pytest.mark.parametrize("kind", WRITERS)
def test_cli_full_disk_is_one_line(case, tmp_path, kind, enospc):
    out = tmp_path / "out.file"
    out.write_bytes(b"old")
    r = run_cli(*_writer(case, kind, out))
    assert_one_error_line(r, str(out), "no space left on device (the disk is full)")
    assert out.read_bytes() == b"old" and _temp_files(tmp_path) == []


@pytest.mark.parametrize("kind", WRITERS)
def test_cli_refused_permission_is_one_line(case, tmp_path, kind, monkeypatch):
    """EACCES when the temporary file is made (a folder whose permissions changed after the options were
    checked, an ACL, a security module): injected, since root may write anywhere."""
    import tempfile

    def refused(*a, **k):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))

    monkeypatch.setattr(tempfile, "mkstemp", refused)
    out = tmp_path / "out.file"
    r = run_cli(*_writer(case, kind, out))
    assert_one_error_line(r, str(out), "cannot write: permission denied")
    assert not out.exists()


@pytest.mark.parametrize("kind", WRITERS)
def test_cli_on_a_real_full_disk(case, tmpfs, kind):
    _fill(tmpfs, leave=0)
    out = tmpfs / "big.out"
    r = run_cli(*_writer(case, kind, out))
    assert_one_error_line(r, str(out), "no space left on device")
    assert not out.exists() and _temp_files(tmpfs) == []


@pytest.mark.parametrize("command", ["evaluate", "compare"])
def test_standard_output_on_a_full_disk_is_one_line(case, tmp_path, command):
    full = _full(tmp_path)
    args = ["evaluate", case["a"]] if command == "evaluate" else ["compare", case["a"], case["b"], "--resamples", "10",
                                                                   "--permutations", "10"]
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=SRC)
    with open(full, "wb") as out:
        p = subprocess.run([sys.executable, "-m", "modelseek", *map(str, args), "-g", str(case["truth"])],
                           stdout=out, stderr=subprocess.PIPE, text=True, env=env, timeout=300)
    assert p.returncode == 1 and p.stderr == ("error: standard output: cannot write: no space left on device (the "
                                              "disk is full)\n"), p.stderr


@pytest.mark.parametrize("out", ["/dev/null/x", "FILE/x"])
def test_select_out_below_a_file_is_a_usage_error(tmp_path, out):
    (tmp_path / "FILE").write_text("x")
    out = out.replace("FILE", str(tmp_path / "FILE"))
    r = run_cli("select", tmp_path / "task.csv", "--pool", "nope", "--budget", "1h", "--out", out)
    assert r.code == 2 and "argument --out" in r.err and "is not a directory" in r.err and "Traceback" not in r.err


# ------------------------------------------------------------------------------------------ the read check
def _unprivileged(*args) -> tuple[int, str]:
    """Run the CLI unable to read a mode-000 file: as a non-root user directly, as root in a child without the
    capabilities that let root read anything (setpriv drops them from the bounding set)."""
    if os.geteuid() != 0:
        r = run_cli(*args)
        return r.code, r.err
    if shutil.which("setpriv") is None:
        pytest.skip("root reads mode-000 files, and setpriv (to drop that capability) is not installed")
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=SRC)
    p = subprocess.run(["setpriv", "--bounding-set=-dac_override,-dac_read_search", sys.executable, "-m", "modelseek",
                        *map(str, args)], capture_output=True, text=True, env=env, timeout=300)
    if "Operation not permitted" in p.stderr and "setpriv" in p.stderr:
        pytest.skip(f"setpriv cannot drop capabilities here: {p.stderr.strip()}")
    return p.returncode, p.stderr


def _readers(case, truth: Path, run: Path) -> dict[str, list]:
    return {"evaluate": ["evaluate", run, "-g", truth],
            "compare": ["compare", run, case["b"], "-g", truth, "--resamples", "10", "--permutations", "10"],
            "structure": ["structure", truth, "--permutations", "20"],
            "fuse": ["fuse", run, case["b"], "-o", case["root"] / "never.txt", "--optimize", "-g", truth]}


@pytest.mark.parametrize("command", ["evaluate", "compare", "structure", "fuse"])
def test_an_unreadable_ground_truth_is_one_line(case, tmp_path, command):
    truth = tmp_path / "ground-truth.csv"
    shutil.copy(case["truth"], truth)
    os.chmod(truth, 0)
    code, err = _unprivileged(*_readers(case, truth, case["a"])[command])
    assert code == 1 and err == f"error: {truth}: cannot read ground-truth file: Permission denied\n", err


def test_an_unreadable_ground_truth_found_beside_the_run_is_one_line(case, tmp_path):
    shutil.copy(case["truth"], tmp_path / "ground-truth.csv")
    shutil.copy(case["a"], tmp_path / "run.txt")
    os.chmod(tmp_path / "ground-truth.csv", 0)
    code, err = _unprivileged("evaluate", tmp_path / "run.txt")
    assert code == 1 and err == f"error: {tmp_path / 'ground-truth.csv'}: cannot read ground-truth file: " \
                                f"Permission denied\n", err


@pytest.mark.parametrize("command", ["evaluate", "compare", "fuse"])
def test_an_unreadable_run_is_one_line(case, tmp_path, command):
    run = tmp_path / "run.txt"
    shutil.copy(case["a"], run)
    os.chmod(run, 0)
    code, err = _unprivileged(*_readers(case, case["truth"], run)[command])
    assert code == 1 and err == f"error: {run}: cannot read run file: Permission denied\n", err


SPECIAL = {"device": "is a character device, expected a regular ground-truth file",
           "folder": "is a directory, expected a ground-truth file",
           "dangling symlink": "no such ground-truth file"}


@pytest.mark.parametrize("command", ["evaluate", "compare", "structure", "fuse"])
@pytest.mark.parametrize("kind", sorted(SPECIAL))
def test_a_special_ground_truth_is_one_line_before_any_work(case, tmp_path, command, kind):
    truth = tmp_path / "truth"
    if kind == "device":
        truth = _null(tmp_path)
    elif kind == "folder":
        truth.mkdir()
    else:
        truth.symlink_to(tmp_path / "gone.csv")
    r = run_cli(*_readers(case, truth, case["a"])[command])
    assert_one_error_line(r, str(truth), SPECIAL[kind])


@pytest.mark.parametrize("command", ["evaluate", "compare", "structure", "fuse"])
def test_a_fifo_ground_truth_is_refused_without_waiting_for_a_writer(case, tmp_path, command):
    """Opening a FIFO with no writer blocks for ever: the shared check refuses it by its kind, opening nothing."""
    fifo = tmp_path / "truth.fifo"
    os.mkfifo(fifo)
    r = run_cli_subprocess(*_readers(case, fifo, case["a"])[command], timeout=120)
    assert_one_error_line(r, str(fifo), "is a FIFO (named pipe), expected a regular ground-truth file")


# ------------------------------------------------------------------------------------------ options before work
def test_eevee_tiers_without_costs_fails_before_reading_the_table(tmp_path):
    table = tmp_path / "table.csv"
    table.write_text("not,a\ntable")  # reading it would be another error: this one comes first
    r = run_cli("eevee", "tiers", "--table", table, "--budgets", "3")
    assert_one_error_line(r, "tiers need --costs")


@pytest.mark.parametrize("methods", [[], ["hist-centroid", "hist-knn", "hist-logreg", "colour-logreg",
                                          "texture-logreg", "gram-centroid"]])
def test_bench_style_run_out_counts_methods_before_any_work(tmp_path, methods):
    r = run_cli("bench-style", tmp_path / "no-such-set", "--run-out", tmp_path / "runs.txt",
                *(["-m", *methods] if methods else []))
    assert_one_error_line(r, "--run-out holds at most 5 runs", f"got {len(methods) or 14} methods")
    assert not (tmp_path / "runs.txt").exists()


def test_finetune_on_a_missing_gpu_fails_before_the_grid(tmp_path):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is visible: device=cuda is valid here")
    r = run_cli("finetune", "--pool", tmp_path / "no-pool.csv", "--tasks", tmp_path / "no-tasks", "--out",
                tmp_path / "gt.csv", "--set", "device=cuda")
    assert_one_error_line(r, "field 'device'", "no CUDA device is visible")
    assert list(tmp_path.iterdir()) == []  # no store, no ground truth: nothing started


def test_a_fifo_or_device_in_a_folder_the_user_cannot_write_is_still_an_output(case, tmp_path, monkeypatch):
    """``-o /dev/stdout`` or a process substitution (``-o >(gzip > x.gz)``, a pipe in /dev/fd): their folders are
    not writable by users, and need not be (nothing is made there)."""
    reader = _FifoReader(tmp_path / "pipe")
    monkeypatch.setattr(os, "access", lambda *a, **k: False)  # as a user who may not write in the folder
    r = run_cli("fuse", case["a"], case["b"], "-o", reader.path)
    assert r.code == 0, r.err
    assert b" Q0 " in reader.join()
    r = run_cli("fuse", case["a"], case["b"], "-o", tmp_path / "regular.txt")
    assert r.code == 2 and "is not writable" in r.err


def _select(case, out, pool=None) -> list:
    task = case["layout"] / "task-data" / "train-tasks" / "1001"
    return ["select", task, "--pool", pool or case["layout"] / "models.csv", "--budget", "1h", "--plan-only", "--out",
            out]


def test_select_with_an_unreadable_pool_is_one_line(case, tmp_path):
    pool = tmp_path / "models.csv"
    shutil.copy(case["layout"] / "models.csv", pool)
    os.chmod(pool, 0)
    code, err = _unprivileged(*_select(case, tmp_path / "sel", pool))
    assert code == 1 and err == f"error: {pool}: cannot read pool file: Permission denied\n", err


def test_select_on_a_full_disk_is_one_line(case, tmpfs):
    _fill(tmpfs, leave=0)
    r = run_cli(*_select(case, tmpfs / "sel"))
    assert_one_error_line(r, str(tmpfs / "sel"), "no space left on device")
    assert [p.name for p in (tmpfs / "sel").iterdir() if p.name.endswith(".tmp")] == []


UNREADABLE = {  # command -> (the file made unreadable, the command line given the case and that file)
    "eevee search --table": ("table", lambda c, f: ["eevee", "search", "--table", f, "-k", "1"]),
    "eevee tiers --costs": ("costs", lambda c, f: ["eevee", "tiers", "--table", c["table"], "--costs", f,
                                                   "--budgets", "1"]),
    "rank --train-truth": ("truth", lambda c, f: ["rank", c["layout"], "-m", "avgrank", "--train-truth", f]),
    "validate": ("run", lambda c, f: ["validate", f]),
    "duel runs": ("run", lambda c, f: ["duel", "runs", f, c["b"], "-g", c["truth"]]),
    "fuse --task-features": ("features", lambda c, f: ["fuse", c["a"], c["b"], "-o", c["root"] / "never.txt",
                                                       "--optimize", "-g", c["truth"], "--task-features", f]),
}


@pytest.mark.parametrize("command", sorted(UNREADABLE))
def test_an_unreadable_input_is_one_line_in_every_command(case, tmp_path, command):
    kind, line = UNREADABLE[command]
    f = tmp_path / f"{kind}.csv"
    source = {"table": case["table"], "truth": case["truth"], "run": case["a"]}.get(kind)
    if source is not None:
        shutil.copy(source, f)
    else:
        f.write_text("benchmark,cost\nb1,1\n" if kind == "costs" else "topic,size\n1001,3\n")
    os.chmod(f, 0)
    code, err = _unprivileged(*line(case, f))
    assert code == 1 and len(err.strip().splitlines()) == 1 and err.startswith(f"error: {f}"), err
    assert "Permission denied" in err and "Traceback" not in err


def test_a_job_store_on_a_full_disk_says_so(tmpfs):
    """Issue #36: on a full disk the store said "not a modelseek job store (database or disk is full)"."""
    from modelseek.retrieval.finetune.store import JobStore

    _fill(tmpfs, leave=0)
    with pytest.raises(OutputError) as exc:
        JobStore(tmpfs / "scores.sqlite", rebuild=True).close()
    assert "no space left on device" in str(exc.value) and "not a modelseek job store" not in str(exc.value)
    assert str(exc.value).startswith(str(tmpfs / "scores.sqlite"))
    assert not list(tmpfs.glob("*.damaged-*"))  # a full disk is not damage: nothing moved aside


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_job_store_that_is_a_special_file_is_refused_without_opening_it(tmp_path, kind):
    """SQLite would block for ever reading a FIFO (it opens read-write, so it is its own writer)."""
    from modelseek.core.errors import InputError
    from modelseek.retrieval.finetune.store import JobStore

    path = tmp_path / "scores.sqlite"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path = _device(path, "/dev/null")
    for rebuild in (False, True):
        with pytest.raises(InputError, match="is a (FIFO|character device).*expected a job store file"):
            JobStore(path, rebuild=rebuild)
    assert not stat.S_ISREG(path.stat().st_mode)


def test_a_special_file_where_a_cache_entry_goes_is_moved_aside(tmp_path, caplog):
    import logging

    import numpy as np

    from modelseek.core.cache import load_arrays, read_arrays, write_arrays

    entry = tmp_path / "abc.feat"
    os.mkfifo(entry)  # reading it would block for ever, writing into it would feed whoever reads it
    with caplog.at_level(logging.WARNING):
        assert load_arrays(entry, {"key": "abc"}, what="feature cache") is None
    assert "is not a regular file; moving it aside" in caplog.text
    kept = list(tmp_path.glob("abc.feat.not-a-file-*"))
    assert len(kept) == 1 and stat.S_ISFIFO(kept[0].stat().st_mode) and not os.path.lexists(entry)
    write_arrays(entry, {"x": np.arange(3.0)}, {"key": "abc"})
    assert entry.is_file() and read_arrays(entry, {"key": "abc"})["x"].tolist() == [0.0, 1.0, 2.0]
