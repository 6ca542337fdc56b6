"""The no-follow primitives (copy/local_paths.py) and the file:// filesystem built on them (copy/localfs.py):
a path that is, or passes through, a symbolic link is refused by every operation, naming the link, and nothing
is read, written, renamed or removed where it points. Both ways: openat2(2), and the walk that stands in for
it where the kernel has none (forced here, and chosen by itself when openat2 answers ENOSYS)."""

from __future__ import annotations

import errno
import os
import pickle
from pathlib import Path

import pytest
from pyarrow import fs as pafs

from hivecat.copy import local_paths
from hivecat.copy.local_paths import LinkRefused
from hivecat.copy.storage import Location, Storage


@pytest.fixture(params=["openat2", "walk"], autouse=True)
def resolution(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "walk":
        monkeypatch.setattr(local_paths, "_openat2_works", False)
    elif not local_paths._openat2_usable():
        pytest.skip("this kernel has no openat2")
    return request.param


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """real/dir/f, outside/secret, and links: link -> real/dir, real/flink -> outside/secret, real/up -> outside."""
    (tmp_path / "real" / "dir").mkdir(parents=True)
    (tmp_path / "real" / "dir" / "f").write_bytes(b"data")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret").write_bytes(b"secret")
    (tmp_path / "link").symlink_to(tmp_path / "real" / "dir")
    (tmp_path / "real" / "flink").symlink_to(tmp_path / "outside" / "secret")
    (tmp_path / "real" / "up").symlink_to(tmp_path / "outside")
    (tmp_path / "real" / "broken").symlink_to(tmp_path / "nowhere")
    return tmp_path


def refused(call, link: Path) -> LinkRefused:
    with pytest.raises(LinkRefused) as raised:
        call()
    assert raised.value.link == str(link) and raised.value.errno == errno.ELOOP
    assert str(raised.value).endswith(f"passes through a symbolic link at {link}; links are never followed")
    return raised.value


def test_paths_with_a_link_anywhere_are_refused_naming_it(tree: Path) -> None:
    fd = local_paths.open_path(str(tree / "real" / "dir" / "f"), os.O_RDONLY)
    assert os.read(fd, 10) == b"data"
    os.close(fd)
    refused(lambda: local_paths.open_path(str(tree / "link" / "f"), os.O_RDONLY), tree / "link")
    refused(lambda: local_paths.open_dir(str(tree / "link")), tree / "link")
    refused(lambda: local_paths.open_path(str(tree / "real" / "flink"), os.O_RDONLY), tree / "real" / "flink")
    refused(lambda: local_paths.open_dir(str(tree / "real" / "up")), tree / "real" / "up")
    refused(lambda: local_paths.open_dir(str(tree / "real" / "broken")), tree / "real" / "broken")
    refused(lambda: local_paths.stat_path(str(tree / "real" / "flink")), tree / "real" / "flink")
    refused(lambda: local_paths.stat_path(str(tree / "real" / "up" / "secret")), tree / "real" / "up")
    with pytest.raises(FileNotFoundError):
        local_paths.open_dir(str(tree / "real" / "missing"))
    assert local_paths.stat_path(str(tree / "real" / "dir")).st_mode & 0o170000 == 0o040000


def test_nothing_is_made_written_renamed_or_removed_through_a_link(tree: Path) -> None:
    up = tree / "real" / "up"
    refused(lambda: local_paths.make_dirs(str(up / "a" / "b")), up)
    refused(lambda: local_paths.create_file(str(up / "planted")), up)
    refused(lambda: local_paths.create_file(str(tree / "real" / "flink")), tree / "real" / "flink")
    refused(lambda: local_paths.rename(str(up / "secret"), str(tree / "real" / "stolen")), up)
    refused(lambda: local_paths.rename(str(tree / "real" / "dir" / "f"), str(up / "f")), up)
    refused(lambda: local_paths.exchange(str(tree / "real" / "dir"), str(up / "x")), up)
    refused(lambda: local_paths.remove_tree(str(up / "x")), up)
    refused(lambda: local_paths.remove_file(str(up / "secret")), up)
    with pytest.raises(OSError, match="symbolic link"):  # a link itself is not a tree to remove
        local_paths.remove_tree(str(tree / "real" / "up"))
    assert sorted(p.name for p in (tree / "outside").iterdir()) == ["secret"]
    assert (tree / "outside" / "secret").read_bytes() == b"secret" and (tree / "real" / "dir" / "f").exists()


def test_directories_and_files_are_made_where_no_link_is(tree: Path) -> None:
    os.close(local_paths.create_file(str(tree / "new" / "a" / "b" / "f")))
    assert (tree / "new" / "a" / "b" / "f").is_file()
    local_paths.make_dirs(str(tree / "new" / "c"))
    local_paths.rename(str(tree / "new" / "a"), str(tree / "new" / "moved"))
    assert local_paths.exchange(str(tree / "new" / "moved"), str(tree / "new" / "c"))
    assert (tree / "new" / "c" / "b" / "f").is_file()
    local_paths.remove_tree(str(tree / "new"))
    assert not (tree / "new").exists()


def test_a_directory_is_made_in_its_existing_parent_or_by_the_walk(tree: Path, monkeypatch) -> None:
    """One mkdir in the parent when it exists; a link planted under the name meanwhile is refused all the same
    (the walk takes over and will not descend into it), and nothing is made where it points."""
    made: list[str] = []
    real_mkdir = os.mkdir

    def mkdir(name, mode=0o777, *, dir_fd=None):
        made.append(name)
        if name == "planted" and not (tree / "real" / "dir" / "planted").is_symlink():
            (tree / "real" / "dir" / "planted").symlink_to(tree / "outside")  # between the check and the mkdir
        return real_mkdir(name, mode, dir_fd=dir_fd)

    monkeypatch.setattr(local_paths.os, "mkdir", mkdir)
    local_paths.make_dirs(str(tree / "real" / "dir" / "one"))
    assert made == ["one"] and (tree / "real" / "dir" / "one").is_dir()
    refused(lambda: local_paths.make_dirs(str(tree / "real" / "dir" / "planted")), tree / "real" / "dir" / "planted")
    assert made[1] == "planted" and made.count("planted") == 2  # in the parent (the link planted), then the walk
    refused(lambda: local_paths.make_dirs(str(tree / "real" / "dir" / "planted" / "x")),
            tree / "real" / "dir" / "planted")
    assert sorted(p.name for p in (tree / "outside").iterdir()) == ["secret"]


def test_the_file_scheme_filesystem_refuses_links_and_lists_them_as_themselves(tree: Path) -> None:
    filesystem = Storage().filesystem(Location("file", "", str(tree)))
    assert not isinstance(filesystem, pafs.LocalFileSystem)  # pyarrow's own follows links
    listed = {info.path.removeprefix(str(tree) + "/"): info.type
              for info in filesystem.get_file_info(pafs.FileSelector(str(tree / "real"), recursive=True))}
    assert listed == {"real/dir": pafs.FileType.Directory, "real/dir/f": pafs.FileType.File,
                      "real/flink": pafs.FileType.Unknown, "real/up": pafs.FileType.Unknown,
                      "real/broken": pafs.FileType.Unknown}
    assert filesystem.get_file_info(str(tree / "missing")).type == pafs.FileType.NotFound
    up = tree / "real" / "up"
    refused(lambda: filesystem.get_file_info(str(tree / "link")), tree / "link")
    refused(lambda: filesystem.open_input_stream(str(up / "secret")), up)
    refused(lambda: filesystem.open_output_stream(str(up / "planted")), up)
    refused(lambda: filesystem.create_dir(str(up / "d"), recursive=True), up)
    refused(lambda: filesystem.delete_dir(str(up / "d")), up)
    refused(lambda: filesystem.delete_file(str(up / "secret")), up)
    refused(lambda: filesystem.move(str(up / "secret"), str(tree / "stolen")), up)
    refused(lambda: filesystem.get_file_info(pafs.FileSelector(str(up))), up)
    assert sorted(p.name for p in (tree / "outside").iterdir()) == ["secret"]
    with filesystem.open_output_stream(str(tree / "real" / "dir" / "g")) as out:
        out.write(b"written")
    with filesystem.open_input_stream(str(tree / "real" / "dir" / "g")) as stream:
        assert stream.read() == b"written"
    filesystem.move(str(tree / "real" / "dir" / "g"), str(tree / "real" / "h"))
    assert filesystem.get_file_info(str(tree / "real" / "h")).size == 7


def test_link_refusals_travel_pickled(tree: Path) -> None:
    """Spark executors send their errors back to the driver."""
    exc = refused(lambda: local_paths.open_dir(str(tree / "link")), tree / "link")
    again = pickle.loads(pickle.dumps(exc))
    assert isinstance(again, LinkRefused) and (again.filename, again.link) == (exc.filename, exc.link)


def test_a_kernel_without_openat2_falls_back_to_the_walk(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_paths, "_openat2_works", None)
    calls = []

    def no_openat2(path: str, flags: int, mode: int) -> int:
        calls.append(path)
        raise OSError(errno.ENOSYS, os.strerror(errno.ENOSYS), path)

    monkeypatch.setattr(local_paths, "_openat2", no_openat2)
    os.close(local_paths.open_dir(str(tree / "real" / "dir")))
    refused(lambda: local_paths.open_dir(str(tree / "link")), tree / "link")
    assert calls == ["/"] and local_paths._openat2_works is False  # tried once, then never again
