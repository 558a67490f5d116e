"""Independent segments (issue 13): layout, old-decoder compatibility, random access, -T N,
damage reporting, and interruptions of a parallel run that must leave nothing behind."""

import errno
import io
import json
import os
import signal
import subprocess
import sys
import time

import pytest

import nncompress
from nncompress import api, parallel, segments
from nncompress import format as fmt
from nncompress.cli import main
from nncompress.codec import StreamDecoder, StreamEncoder
from nncompress.format import NNCError

SEG = 8192


@pytest.fixture(scope="module")
def text(sample_text):
    return sample_text[:20_000] + sample_text[:16_000]  # 36,000 bytes: 4 full segments and a short one


@pytest.fixture(scope="module")
def archive(text):
    return nncompress.compress(text, 1, segment_size=SEG)


def one_stream(data, level=1, block_size=1 << 20):
    """The single stream compress() writes for data (StreamEncoder directly): the model sized to
    the data, the last block marked as the last."""
    encoder = StreamEncoder(level, block_size=block_size, size=len(data))
    out = bytearray(encoder.header())
    for start in range(0, len(data), block_size):
        out += encoder.block(data[start : start + block_size], last=start + block_size >= len(data))
    return bytes(out + encoder.end())


def temp_files(directory):
    return [name for name in os.listdir(directory) if name.startswith(".nnc-")]


# -- layout --

def test_input_up_to_one_segment_is_unchanged(text):
    assert nncompress.compress(text[:SEG], 1, segment_size=SEG) == one_stream(text[:SEG])
    assert nncompress.compress(text, 1) == one_stream(text)  # below the default segment size
    assert nncompress.compress(b"", 1, segment_size=SEG) == one_stream(b"")


def test_segments_are_independent_streams_back_to_back(text, archive):
    pieces = [text[i : i + SEG] for i in range(0, len(text), SEG)]
    assert archive == b"".join(one_stream(piece) for piece in pieces)
    exact = text[: 3 * SEG]  # an exact multiple: three segments, no empty fourth
    assert nncompress.compress(exact, 1, segment_size=SEG) == b"".join(one_stream(p) for p in pieces[:3])


def test_blocks_restart_at_each_segment(text):
    blob = nncompress.compress(text, 1, block_size=3000, segment_size=SEG)
    table = segments.index_segments(io.BytesIO(blob))
    assert [entry.blocks for entry in table] == [3, 3, 3, 3, 2]  # 8192 = 3000 + 3000 + 2192
    assert nncompress.decompress(blob) == text


def test_streaming_compressor_matches_one_shot(text, archive):
    compressor = api.NNCompressor(1, segment_size=SEG)
    out = bytearray()
    for start in range(0, len(text), 1000):
        out += compressor.compress(text[start : start + 1000])
    out += compressor.flush()
    assert bytes(out) == archive


def test_old_single_process_decoder_reads_segmented_archives(text, archive, tmp_path):
    decoder = StreamDecoder(multi_stream=True)  # the decoder format 1 always had
    out = bytearray()
    for start in range(0, len(archive), 777):
        out += decoder.feed(archive[start : start + 777])
    decoder.finish()
    assert bytes(out) == text and decoder.streams == 5
    path = tmp_path / "doc.nnc"
    path.write_bytes(archive)
    assert main(["-d", str(path)]) == 0  # -T 1: the block-streaming path
    assert (tmp_path / "doc").read_bytes() == text


def test_list_shows_each_segment(archive, tmp_path, capsys):
    path = tmp_path / "doc.nnc"
    path.write_bytes(archive)
    assert main(["-l", "--json", str(path)]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [row["uncompressed"] for row in rows] == [SEG] * 4 + [36_000 - 4 * SEG]
    assert sum(row["compressed"] for row in rows) == len(archive)


def test_segment_index(text, archive):
    table = segments.index_segments(io.BytesIO(archive))
    assert [(e.raw_start, e.raw_size) for e in table] == [(i * SEG, min(SEG, 36_000 - i * SEG))
                                                          for i in range(5)]
    for entry in table:
        stream = archive[entry.offset : entry.offset + entry.compressed_size]
        assert segments.decompress_segment(stream) == text[entry.raw_start : entry.raw_end]
    assert segments.find_segment(table, 0) is table[0]
    assert segments.find_segment(table, SEG) is table[1]
    assert segments.find_segment(table, 36_000) is None
    with pytest.raises(NNCError, match="truncated"):
        segments.index_segments(io.BytesIO(archive[:-3]))
    with pytest.raises(NNCError, match="trailing garbage"):
        segments.index_segments(io.BytesIO(archive + b"junk"))


def test_size_option_parsing():
    assert segments.parse_size("4M") == 4 << 20
    assert segments.parse_size("16MiB") == 16 << 20
    assert segments.parse_size("512k") == 512 << 10
    assert segments.parse_size("65536") == 65536
    with pytest.raises(ValueError):
        segments.parse_size("lots")
    with pytest.raises(ValueError):
        api.NNCompressor(1, segment_size=100)


# -- random access --

def test_seek_and_tell(text, archive):
    with nncompress.open(io.BytesIO(archive)) as f:
        assert f.seekable() and f.tell() == 0
        assert f.read(10) == text[:10] and f.tell() == 10
        for target in (30_000, 5, SEG - 1, SEG, 2 * SEG + 17, 35_999, 17_000):
            assert f.seek(target) == target
            assert f.read(300) == text[target : target + 300]
            assert f.tell() == min(target + 300, 36_000)
        assert f.seek(-100, io.SEEK_END) == 35_900 and f.read() == text[-100:]
        assert f.seek(50_000) == 36_000 and f.read() == b""
        f.seek(100)
        assert f.seek(-50, io.SEEK_CUR) == 50 and f.read(10) == text[50:60]
        with pytest.raises(ValueError):
            f.seek(-1)


def test_seek_decodes_only_the_target_segment(text, archive):
    """Segment 0 is damaged; reading from segment 2 never touches it."""
    damaged = bytearray(archive)
    damaged[200] ^= 0xFF  # inside segment 0's payload
    with nncompress.open(io.BytesIO(bytes(damaged))) as f:
        f.seek(2 * SEG + 5)
        assert f.read(SEG) == text[2 * SEG + 5 : 3 * SEG + 5]
        with pytest.raises(NNCError):  # (a lazy decoder may only notice on the read)
            f.seek(10)
            f.read()


def test_seek_needs_a_seekable_file(archive):
    class Pipe(io.RawIOBase):
        def __init__(self, data):
            self.data = io.BytesIO(data)

        def readable(self):
            return True

        def readinto(self, b):
            return self.data.readinto(b)

    with nncompress.open(Pipe(archive)) as f:
        assert not f.seekable()
        with pytest.raises(io.UnsupportedOperation) as refused:
            f.seek(10)
        assert str(refused.value) == "the underlying file is not seekable"


# -- damage --

def test_damaged_segment_is_named_and_the_others_verify(text, archive, tmp_path, capsys):
    table = segments.index_segments(io.BytesIO(archive))
    damaged = bytearray(archive)
    damaged[table[2].offset + table[2].compressed_size // 2] ^= 0x55  # a payload byte of segment 2
    path = tmp_path / "doc.nnc"
    path.write_bytes(bytes(damaged))
    assert main(["-t", str(path)]) == 1
    err = capsys.readouterr().err
    assert "1 of 5 segments damaged (4 verified)" in err
    assert f"segment 2 (at byte {table[2].offset} of the archive)" in err
    assert "segment 0 " not in err and "segment 3 " not in err


def test_damaged_framing_resyncs_at_the_next_segment(archive, tmp_path, capsys):
    table = segments.index_segments(io.BytesIO(archive))
    damaged = bytearray(archive)
    damaged[table[1].offset + 5] ^= 0x01  # segment 1's header (its checksum no longer matches)
    path = tmp_path / "doc.nnc"
    path.write_bytes(bytes(damaged))
    assert main(["-t", str(path)]) == 1
    err = capsys.readouterr().err
    assert "1 of 5 segments damaged (4 verified)" in err and "segment 1 " in err, err
    with pytest.raises(NNCError, match="segment 1"):
        list(segments.split_streams(io.BytesIO(bytes(damaged))))


def test_one_segment_archive_keeps_its_error_messages(tmp_path, capsys):
    path = tmp_path / "x.nnc"
    path.write_bytes(nncompress.compress(b"hello world" * 50, 1)[:-2])
    assert main(["-t", str(path)]) == 1
    err = capsys.readouterr().err
    assert "truncated" in err and "segments damaged" not in err


# -- -T N --

def test_threads_write_the_same_bytes_both_ways(text, archive, tmp_path):
    src = tmp_path / "doc"
    src.write_bytes(text)
    assert main(["-1", "-T", "2", "--segment-size", str(SEG), "-o", str(tmp_path / "t2.nnc"), str(src)]) == 0
    assert (tmp_path / "t2.nnc").read_bytes() == archive
    assert main(["-d", "-T", "2", "-o", str(tmp_path / "back"), str(tmp_path / "t2.nnc")]) == 0
    assert (tmp_path / "back").read_bytes() == text
    assert main(["-t", "-T", "0", str(tmp_path / "t2.nnc")]) == 0


def test_threads_capped_by_memory():
    from nncompress.presets import params_for_level

    params = params_for_level(9)
    need = parallel.worker_memory(params, 1 << 24) + (1 << 24)
    assert parallel.plan_workers(8, params, 1 << 24, available=3 * need + 1) == 3
    assert parallel.plan_workers(8, params, 1 << 24, available=10) == 1
    assert parallel.plan_workers(2, params, 1 << 24, available=1 << 50) == 2
    assert parallel.plan_workers(0, params, 1 << 24, available=1 << 50) == parallel.cpu_count()


def test_threads_api_round_trip(text, archive):
    assert nncompress.compress(text, 1, segment_size=SEG, threads=2) == archive
    assert nncompress.decompress(archive, threads=2) == text


# -- interruptions: nothing partial left, nothing lost --

def test_full_disk_during_parallel_run_leaves_nothing(text, tmp_path, monkeypatch, capsys):
    src = tmp_path / "doc"
    src.write_bytes(text)
    real_write = parallel._write_all
    calls = []

    def write_then_fill_up(sink, data):
        calls.append(len(data))
        if len(calls) == 3:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_write(sink, data)

    monkeypatch.setattr(parallel, "_write_all", write_then_fill_up)
    assert main(["-1", "-T", "2", "--rm", "--segment-size", str(SEG), str(src)]) == 1
    assert "No space left on device" in capsys.readouterr().err
    assert src.read_bytes() == text  # --rm did not run
    assert not (tmp_path / "doc.nnc").exists() and not temp_files(tmp_path)


def _reset_signals():
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)


def test_ctrl_c_during_parallel_run_leaves_nothing(sample_text, tmp_path):
    psutil = pytest.importorskip("psutil")
    src = tmp_path / "big"
    data = (sample_text * 4)[:80_000]
    src.write_bytes(data)
    proc = subprocess.Popen([sys.executable, "-m", "nncompress", "-1", "-T", "2", "--segment-size", "4096",
                             str(src)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True, preexec_fn=_reset_signals)
    deadline = time.monotonic() + 240
    while not any(os.path.getsize(tmp_path / name) for name in temp_files(tmp_path)):
        # segments are being written: workers are busy with the next ones
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.02)
    helpers = psutil.Process(proc.pid).children(recursive=True)
    assert helpers  # the forkserver and its workers
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    err = err.decode()
    assert proc.returncode == 128 + signal.SIGINT, err
    assert "interrupted" in err and "Traceback" not in err, err
    assert src.read_bytes() == data
    assert not (tmp_path / "big.nnc").exists() and not temp_files(tmp_path)
    _, alive = psutil.wait_procs(helpers, timeout=30)
    assert not alive  # no worker outlives the run


def test_many_small_files_go_to_the_workers_whole(sample_text, tmp_path):
    names = []
    for i, size in enumerate([3000, 50, 0, 7000]):
        path = tmp_path / f"f{i}.txt"
        path.write_bytes(sample_text[i * 100 : i * 100 + size])
        names.append(str(path))
    assert main(["-1", "-T", "2", *names]) == 0
    for name in names:
        original = open(name, "rb").read()
        assert open(name + ".nnc", "rb").read() == nncompress.compress(original, 1)
        os.unlink(name)
    assert main(["-d", "-T", "2", *[name + ".nnc" for name in names]]) == 0
    assert [open(name, "rb").read() for name in names] == [sample_text[i * 100 : i * 100 + size]
                                                          for i, size in enumerate([3000, 50, 0, 7000])]


def test_several_files_are_prefetched_and_only_then(sample_text, tmp_path, monkeypatch):
    """With -T and several files to compress or decompress, one FilePrefetcher sends them
    ahead and its results are used; one file, or -t, gets none (the output is the same either
    way, so only counting tells)."""
    made, used = [], []

    class Counting(parallel.FilePrefetcher):
        def __init__(self, engine, names, mode, *args, **kwargs):
            made.append((list(names), mode))
            super().__init__(engine, names, mode, *args, **kwargs)

        def take(self, name, data):
            out = super().take(name, data)
            used.append(out is not None)
            return out

    monkeypatch.setattr(parallel, "FilePrefetcher", Counting)
    names = []
    for i in range(2):
        names.append(str(tmp_path / f"f{i}.txt"))
        with open(names[-1], "wb") as f:
            f.write(sample_text[i * 500 : i * 500 + 2000])
    packed = [name + ".nnc" for name in names]
    runs = [(["-1", "-T", "2", *names], (names, "compress")),
            (["-d", "-f", "-T", "2", *packed], (packed, "decompress")),
            (["-1", "-f", "-T", "2", names[0]], None),
            (["-t", "-T", "2", *packed], None)]
    for argv, expected in runs:
        made.clear()
        used.clear()
        assert main(argv) == 0
        assert made == ([expected] if expected else [])
        assert any(used) if expected else not used


def test_prefetched_result_is_used_only_for_the_same_bytes(tmp_path):
    path = tmp_path / "a"
    path.write_bytes(b"first version " * 20)
    prefetch = parallel.FilePrefetcher(parallel.SerialEngine(), [str(path)], "compress", 1 << 20, level=1)
    assert prefetch.take(str(path), b"changed since") is None
    prefetch = parallel.FilePrefetcher(parallel.SerialEngine(), [str(path)], "compress", 1 << 20, level=1)
    assert prefetch.take(str(path), path.read_bytes()) == nncompress.compress(path.read_bytes(), 1)
    reader = parallel.Prepended(b"abc", io.BytesIO(b"def"))
    assert reader.read(2) == b"ab" and reader.read(5) == b"c" and reader.read() == b"def"


def test_killed_local_worker_abandons_the_output_cleanly(sample_text, tmp_path):
    psutil = pytest.importorskip("psutil")
    src = tmp_path / "big"
    data = (sample_text * 4)[:80_000]
    src.write_bytes(data)
    proc = subprocess.Popen([sys.executable, "-m", "nncompress", "-1", "-T", "2", "--rm",
                             "--segment-size", "4096", str(src)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True, preexec_fn=_reset_signals)
    deadline = time.monotonic() + 240
    while not any(os.path.getsize(tmp_path / name) for name in temp_files(tmp_path)):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.02)
    workers = [p for p in psutil.Process(proc.pid).children(recursive=True)
               if p.ppid() != proc.pid]  # the forkserver's children
    assert workers
    workers[0].kill()
    _, err = proc.communicate(timeout=120)
    err = err.decode()
    assert proc.returncode == 1, err
    assert "worker process died" in err and "Traceback" not in err, err
    assert src.read_bytes() == data  # --rm did not run
    assert not (tmp_path / "big.nnc").exists() and not temp_files(tmp_path)


def test_segment_size_option_in_one_process(text, archive, tmp_path):
    src = tmp_path / "doc"
    src.write_bytes(text)
    assert main(["-1", "--segment-size", "8K", "-o", str(tmp_path / "t1.nnc"), str(src)]) == 0
    assert (tmp_path / "t1.nnc").read_bytes() == archive


def test_seek_refusals_name_the_problem(archive, tmp_path):
    with nncompress.open(io.BytesIO(archive)) as f:
        for args, message in (((0, 3), "invalid whence (3)"), ((-5,), "negative seek position -5"),
                              ((-1, io.SEEK_CUR), "negative seek position -1"),
                              ((-36_001, io.SEEK_END), "negative seek position -1")):
            with pytest.raises(ValueError) as refused:
                f.seek(*args)
            assert str(refused.value) == message
        assert f.seek(0) == 0 and f.seek(0, io.SEEK_END) == 36_000 and f.seek(0) == 0
    with nncompress.open(tmp_path / "x.nnc", "wb") as f:
        with pytest.raises(io.UnsupportedOperation) as refused:
            f.seek(0)
        assert str(refused.value) == "file not open for reading"


def test_seek_decodes_only_the_way_to_its_target(text, archive, decoded_nibbles):
    """Forward within a segment reads on from where the file is; a seek to where it is
    decodes nothing; backwards restarts at the segment's start, not the archive's."""
    nibbles = decoded_nibbles
    with nncompress.open(io.BytesIO(archive)) as f:
        assert f.seek(SEG + 2000) == SEG + 2000
        assert nibbles["n"] == 2 * 2000  # from segment 1's start
        nibbles["n"] = 0
        assert f.seek(SEG + 2000) == SEG + 2000 and nibbles["n"] == 0
        assert f.seek(SEG + 3000) == SEG + 3000 and nibbles["n"] == 2 * 1000
        nibbles["n"] = 0
        assert f.seek(SEG + 1000) == SEG + 1000 and nibbles["n"] == 2 * 1000
        assert f.read(10) == text[SEG + 1000 : SEG + 1010]


def test_seek_reads_on_until_its_target_whatever_each_read_gives(text, archive):
    with nncompress.open(io.BytesIO(archive)) as f:
        real_read = f.read
        f.read = lambda size=-1: real_read(min(size, 700) if size >= 0 else 700)
        assert f.seek(SEG + 3000) == SEG + 3000  # 3000 bytes from segment 1's start, in 5 reads
        assert real_read(10) == text[SEG + 3000 : SEG + 3010]


# -- the framing walk, word for word (split_streams for -T/-t, index_segments for seek) --

@pytest.fixture(scope="module")
def blocked(text):
    """text in 5 segments of 3, 3, 3, 3 and 2 blocks of 3,000 bytes: every segment ends with a
    trailer (its total length), which the framing walk checks against its blocks."""
    return nncompress.compress(text, 1, block_size=3000, segment_size=SEG)


def _refusal(call):
    with pytest.raises(NNCError) as refused:
        call()
    return str(refused.value)


def _split(blob, **options):
    return list(segments.split_streams(io.BytesIO(blob), **options))


def _with_trailer_length(blob, entry, total):
    """blob with the trailer of segment `entry` stating `total` raw bytes (same varint width)."""
    from nncompress.format import put_varint

    old, new = bytearray(), bytearray()
    put_varint(old, entry.raw_size)
    put_varint(new, total)
    assert len(old) == len(new)
    at = entry.offset + entry.compressed_size - 4 - len(old)
    assert blob[at : at + len(old)] == old
    return blob[:at] + bytes(new) + blob[at + len(old):]


def test_segment_size_floor_is_inclusive_and_named():
    assert segments.check_segment_size(None) is None
    assert segments.check_segment_size(4096) == 4096 == segments.MIN_SEGMENT_SIZE
    with pytest.raises(ValueError) as refused:
        segments.check_segment_size(4095)
    assert str(refused.value) == "segment size must be at least 4096 bytes"


def test_read_segments_cuts_whole_pieces_however_the_source_reads():
    data = bytes(range(256)) * 40  # 10,240 bytes: two 4 KiB segments and 2,048 bytes

    class Trickle(io.RawIOBase):
        """Gives at most 700 bytes a read, and records what was asked."""

        def __init__(self, payload):
            self.inner, self.asked = io.BytesIO(payload), []

        def readable(self):
            return True

        def read(self, size=-1):
            self.asked.append(size)
            return self.inner.read(min(size, 700))

    expected = [data[:4096], data[4096:8192], data[8192:]]
    assert list(segments.read_segments(io.BytesIO(data), 4096)) == expected
    assert list(segments.read_segments(io.BytesIO(data), 4096, chunk=1000)) == expected
    source = Trickle(data)
    assert list(segments.read_segments(source, 4096, chunk=1000)) == expected
    assert max(source.asked) == 1000 and min(source.asked) > 0  # never past a piece's end
    assert 4096 - 5 * 700 in source.asked  # the rest of a piece, not a whole chunk
    assert list(segments.read_segments(io.BytesIO(data[:8192]), 4096)) == expected[:2]  # no empty third
    assert list(segments.read_segments(io.BytesIO(b""), 4096)) == [b""]  # an empty file: one empty piece


def test_decompress_segment_takes_exactly_one_stream(text, blocked):
    table = segments.index_segments(io.BytesIO(blocked))
    first = blocked[: table[0].compressed_size]
    assert segments.decompress_segment(first) == text[:SEG]
    assert _refusal(lambda: segments.decompress_segment(first[:-1])) == \
        "compressed data ended before the end of the stream (truncated)"
    assert _refusal(lambda: segments.decompress_segment(first + b"x")) == \
        "trailing data after the end of the compressed stream"
    assert _refusal(lambda: segments.decompress_segment(blocked)) == \
        "trailing data after the end of the compressed stream"  # a second segment is not welcome


@pytest.mark.parametrize("chunk", [1 << 20, 1000, 7])
def test_split_streams_cuts_at_every_segment(text, blocked, chunk):
    table = segments.index_segments(io.BytesIO(blocked))
    pieces = _split(blocked, chunk=chunk)
    assert [(p.index, p.offset, p.error) for p in pieces] == [(e.index, e.offset, None) for e in table]
    assert [p.data for p in pieces] == [blocked[e.offset : e.offset + e.compressed_size] for e in table]
    assert pieces == _split(blocked, recover=True, chunk=chunk)


@pytest.mark.parametrize("chunk", [1 << 20, 7])
def test_split_streams_names_the_segment_and_the_problem_exactly(blocked, chunk):
    table = segments.index_segments(io.BytesIO(blocked))

    def refused(blob):
        return _refusal(lambda: _split(blob, chunk=chunk))

    at = "segment {} (at byte {} of the archive): ".format
    truncated = "compressed data ended before the end of the stream (truncated)"
    assert refused(b"") == "no compressed data (empty input)"
    assert refused(b"junk" + blocked) == at(0, 0) + "not an nncompress archive (bad magic)"
    assert refused(blocked[:-1]) == at(4, table[4].offset) + truncated
    assert refused(blocked[: table[3].offset + 3]) == at(3, table[3].offset) + truncated
    assert refused(blocked + b"junk") == at(5, len(blocked)) + "trailing garbage after the compressed stream"
    assert refused(blocked + b"NN") == at(5, len(blocked)) + truncated
    # a header that starts right but is damaged is a damaged segment, not trailing garbage
    damaged = bytearray(blocked)
    damaged[table[1].offset + 5] ^= 0x01
    assert refused(bytes(damaged)) == at(1, table[1].offset) + "corrupt archive header (checksum mismatch)"
    assert refused(_with_trailer_length(blocked, table[2], SEG - 1)) == \
        at(2, table[2].offset) + "corrupt archive: trailer length does not match the blocks"
    # the first block frame of segment 3 claims more than the stream's block size
    frame = table[3].offset + len(table[3].header.encode())
    damaged = bytearray(blocked)
    damaged[frame : frame + 2] = b"\xff\x7f"
    assert refused(bytes(damaged)) == \
        at(3, table[3].offset) + "corrupt archive: block longer than the stream's block size"


@pytest.mark.parametrize("chunk", [1 << 20, 1000, 7])
def test_recovery_goes_on_at_the_next_good_header(blocked, chunk):
    """-t's walk: a damaged segment becomes a piece without data, named with its offset and its
    problem, and the search goes on at the next header that checks out, skipping anything that
    only looks like one."""
    table = segments.index_segments(io.BytesIO(blocked))

    def stream(i):
        return blocked[table[i].offset : table[i].offset + table[i].compressed_size]

    def walk(blob):
        return [(p.index, p.offset, p.data, p.error) for p in _split(blob, recover=True, chunk=chunk)]

    damaged = bytearray(blocked)
    damaged[table[1].offset + 5] ^= 0x01  # segment 1's header checksum
    middle = table[1].offset + table[1].compressed_size // 2
    damaged[middle : middle + 12] = b"NNC\x1a" + bytes(8)  # a false header inside segment 1
    assert walk(bytes(damaged)) == [
        (0, 0, stream(0), None),
        (1, table[1].offset, None, "corrupt archive header (checksum mismatch)"),
        (2, table[2].offset, stream(2), None), (3, table[3].offset, stream(3), None),
        (4, table[4].offset, stream(4), None)]
    assert walk(_with_trailer_length(blocked, table[2], SEG + 1))[1:4] == [
        (1, table[1].offset, stream(1), None),
        (2, table[2].offset, None, "corrupt archive: trailer length does not match the blocks"),
        (3, table[3].offset, stream(3), None)]
    truncated = "compressed data ended before the end of the stream (truncated)"
    assert walk(blocked[:-1])[3:] == [(3, table[3].offset, stream(3), None),
                                      (4, table[4].offset, None, truncated)]
    assert walk(blocked + b"junk")[4:] == [(4, table[4].offset, stream(4), None),
                                           (5, len(blocked), None, "trailing garbage after the compressed stream")]
    # garbage, then a good segment: the garbage is one damaged piece, the segment is found
    assert walk(blocked[: table[1].offset] + b"garbage" + blocked[table[1].offset:])[1:3] == [
        (1, table[1].offset, None, "trailing garbage after the compressed stream"),
        (2, table[1].offset + 7, stream(1), None)]
    # a header cut short at the very end: one damaged piece, nothing lost before it
    assert walk(blocked + stream(0)[:6])[5:] == [(5, len(blocked), None, truncated)]
    assert walk(b"junk" + blocked)[:2] == [(0, 0, None, "not an nncompress archive (bad magic)"),
                                           (1, 4, stream(0), None)]
    with pytest.raises(NNCError) as refused:
        _split(b"", recover=True, chunk=chunk)
    assert str(refused.value) == "no compressed data (empty input)"


def test_segment_index_reads_every_field(text, blocked):
    table = segments.index_segments(io.BytesIO(blocked))
    assert [e.index for e in table] == list(range(5))
    assert [e.blocks for e in table] == [3, 3, 3, 3, 2]
    assert [(e.raw_start, e.raw_size, e.raw_end) for e in table] == \
        [(i * SEG, min(SEG, 36_000 - i * SEG), min((i + 1) * SEG, 36_000)) for i in range(5)]
    assert table[0].offset == 0 and sum(e.compressed_size for e in table) == len(blocked)
    for entry, following in zip(table, table[1:]):
        assert following.offset == entry.offset + entry.compressed_size
    for entry in table:
        header, _ = nncompress.format.parse_header(blocked, entry.offset)
        assert entry.header == header and header.block_size == 3000
        assert segments.decompress_segment(
            blocked[entry.offset : entry.offset + entry.compressed_size]) == text[entry.raw_start : entry.raw_end]
    one = segments.index_segments(io.BytesIO(nncompress.compress(b"", 1)))
    assert [(e.offset, e.raw_start, e.raw_size, e.blocks) for e in one] == [(0, 0, 0, 0)]


def test_segment_index_names_the_segment_and_the_problem_exactly(blocked):
    table = segments.index_segments(io.BytesIO(blocked))

    def refused(blob):
        return _refusal(lambda: segments.index_segments(io.BytesIO(blob)))

    truncated = "compressed data ended before the end of the stream (truncated)"
    assert refused(b"") == "no compressed data (empty input)"
    assert refused(b"junk" + blocked) == "segment 0: not an nncompress archive (bad magic)"
    assert refused(blocked[:3]) == "segment 0: compressed data ended inside the header (truncated)"
    assert refused(blocked + blocked[:6]) == "segment 5: compressed data ended inside the header (truncated)"
    assert refused(blocked + b"junk") == "trailing garbage after the compressed stream"
    assert refused(blocked[:-1]) == f"segment 4: {truncated}"  # inside the trailer
    assert refused(blocked[: table[4].offset + 40]) == f"segment 4: {truncated}"  # inside a payload
    frame = table[3].offset + len(table[3].header.encode())
    assert refused(blocked[: frame + 1]) == f"segment 3: {truncated}"  # inside a block frame
    damaged = bytearray(blocked)
    damaged[table[1].offset + 5] ^= 0x01
    assert refused(bytes(damaged)) == "trailing garbage after the compressed stream"  # (no resync here)
    damaged = bytearray(blocked)
    damaged[frame : frame + 2] = b"\xff\x7f"
    assert refused(bytes(damaged)) == "segment 3: corrupt archive: block longer than the stream's block size"
    assert refused(_with_trailer_length(blocked, table[2], SEG - 1)) == \
        "segment 2: corrupt archive: trailer length does not match the blocks"


def test_find_segment_finds_every_byte_of_every_segment(blocked):
    table = segments.index_segments(io.BytesIO(blocked))
    for count in range(1, 6):
        part = table[:count]
        for entry in part:
            for position in (entry.raw_start, entry.raw_start + 1, entry.raw_end - 1):
                assert segments.find_segment(part, position) is entry
        assert segments.find_segment(part, part[-1].raw_end) is None
        assert segments.find_segment(part, part[-1].raw_end + 5) is None
    assert segments.find_segment([], 0) is None


# -- the segment pipeline's own accounting and messages (parallel.py, one process) --

def _damaged(archive, *, payload=(), header=()):
    table = segments.index_segments(io.BytesIO(archive))
    out = bytearray(archive)
    for i in payload:
        out[table[i].offset + table[i].compressed_size // 2] ^= 0x55
    for i in header:
        out[table[i].offset + 5] ^= 0x01
    return bytes(out), table


def test_pipeline_counts_and_reports_progress_per_segment(text, archive):
    sizes = [SEG] * 4 + [36_000 - 4 * SEG]
    sink, seen = io.BytesIO(), []
    assert parallel.compress_stream(io.BytesIO(text), sink, parallel.SerialEngine(), level=1,
                                    segment_size=SEG, progress=seen.append, size=len(text)) == (36_000, len(archive))
    assert sink.getvalue() == archive and seen == sizes
    sink, seen = io.BytesIO(), []
    assert parallel.decompress_stream(io.BytesIO(archive), sink, parallel.SerialEngine(),
                                      progress=seen.append) == (len(archive), 36_000)
    assert sink.getvalue() == text and seen == sizes
    seen = []  # checking only (-t): nothing written, the same counts
    assert parallel.decompress_stream(io.BytesIO(archive), None, parallel.SerialEngine(), verify_all=True,
                                      progress=seen.append) == (len(archive), 36_000)
    assert seen == sizes
    for bad, message in ((None, "parallel compression needs a segment size"),
                         (4095, "segment size must be at least 4096 bytes")):
        with pytest.raises(ValueError) as refused:
            parallel.compress_stream(io.BytesIO(text), io.BytesIO(), parallel.SerialEngine(), level=1,
                                     segment_size=bad)
        assert str(refused.value) == message


# What a flipped payload byte of these level-1 archives gives: level 1 codes down the path, and the
# decoder's descent of the tree meets the damage before the block checksum does
PAYLOAD_DAMAGE = "corrupt archive: undecodable block payload (compressed data invalid for the entropy model)"


def test_checking_names_every_damaged_segment_word_for_word(text, archive):
    def check(blob):
        return _refusal(lambda: parallel.decompress_stream(io.BytesIO(blob), None, parallel.SerialEngine(),
                                                           verify_all=True))

    blob, table = _damaged(archive, payload=[2], header=[1])
    assert check(blob) == (
        f"2 of 5 segments damaged (3 verified): segment 1 (at byte {table[1].offset} of the archive): "
        "corrupt archive header (checksum mismatch); "
        f"segment 2 (at byte {table[2].offset} of the archive): {PAYLOAD_DAMAGE}")
    assert check(archive[:-1]) == (
        f"1 of 5 segments damaged (4 verified): segment 4 (at byte {table[4].offset} of the archive): "
        "compressed data ended before the end of the stream (truncated)")
    blob, _ = _damaged(archive, payload=[0, 4])
    assert check(blob).startswith("2 of 5 segments damaged (3 verified): segment 0 (at byte 0 of the "
                                  "archive): corrupt archive: block checksum mismatch (data damaged); "
                                  f"segment 4 (at byte {table[4].offset} of the archive): ")
    single = nncompress.compress(text[:3000], 1)
    assert check(single[:-2]) == "compressed data ended before the end of the stream (truncated)"
    damaged = bytearray(single)
    damaged[len(damaged) // 2] ^= 0x55
    bare = _refusal(lambda: segments.decompress_segment(bytes(damaged)))
    assert bare.startswith("corrupt archive: ") and check(bytes(damaged)) == bare


def test_decoding_stops_at_the_first_damaged_segment_after_writing_the_ones_before(text, archive):
    blob, table = _damaged(archive, payload=[2])
    sink = io.BytesIO()
    assert _refusal(lambda: parallel.decompress_stream(io.BytesIO(blob), sink, parallel.SerialEngine())) == \
        f"segment 2 (at byte {table[2].offset} of the archive): {PAYLOAD_DAMAGE}"
    assert sink.getvalue() == text[: 2 * SEG]
    blob, _ = _damaged(archive, header=[1])
    sink = io.BytesIO()
    assert _refusal(lambda: parallel.decompress_stream(io.BytesIO(blob), sink, parallel.SerialEngine())) == \
        f"segment 1 (at byte {table[1].offset} of the archive): corrupt archive header (checksum mismatch)"
    # (bad framing is met while reading ahead, possibly before segment 0's result is taken)
    assert text[:SEG].startswith(sink.getvalue())


def test_the_command_line_check_names_every_damaged_segment(archive, tmp_path, capsys):
    blob, table = _damaged(archive, payload=[3], header=[0])
    path = tmp_path / "doc.nnc"
    path.write_bytes(blob)
    assert main(["-t", str(path)]) == 1
    assert capsys.readouterr().err == (
        f"nncompress: {path}: 2 of 5 segments damaged (3 verified): segment 0 (at byte 0 of the "
        "archive): corrupt archive header (checksum mismatch); "
        f"segment 3 (at byte {table[3].offset} of the archive): {PAYLOAD_DAMAGE}\n")


def test_format_1_segments_are_walked_with_their_own_framing(text):
    """Version 1's block frames code the length differently (no 'last' bit) and always end with
    an end marker and a trailer: the walk must read each stream with its own header's version."""
    streams = [segments.compress_segment(text[i : i + SEG], 1, block_size=block, format_version=1, preset_id=1)
               for i, block in zip(range(0, 3 * SEG, SEG), (3000, 1 << 20, 3000))]  # 3, 1 and 3 blocks
    blob = b"".join(streams)
    assert [p.data for p in _split(blob)] == streams
    assert [p.data for p in _split(blob, recover=True, chunk=7)] == streams
    assert [e.compressed_size for e in segments.index_segments(io.BytesIO(blob))] == [len(s) for s in streams]
    sink = io.BytesIO()
    assert parallel.decompress_stream(io.BytesIO(blob), sink, parallel.SerialEngine()) == (len(blob), 3 * SEG)
    assert sink.getvalue() == text[: 3 * SEG]


# -- round 6 of the mutation review (bench/MUTATION.md 2f) --

class _Recording(io.BytesIO):
    """Records the size of every read."""

    def __init__(self, payload):
        super().__init__(payload)
        self.asked, self.answered = [], []

    def read(self, size=-1):
        self.asked.append(size)
        self.answered.append(len(out := super().read(size)))
        return out


def test_segment_index_reads_a_few_bytes_per_block_not_the_archive(blocked):
    """The index hops from frame to frame: 1,024 bytes for a header, 32 for a block frame (or a
    frame and the trailer), never the whole archive."""
    source = _Recording(blocked)
    table = segments.index_segments(source)
    expected = []
    for entry in table:  # a header, each block's frame, then the trailer (after the last frame)
        expected += [1024] + [32] * (entry.blocks + 1)
    assert source.asked == expected


@pytest.mark.parametrize("recover", [False, True])
def test_split_streams_reads_in_chunks_not_the_whole_archive(blocked, recover):
    source = _Recording(blocked + (b"junk" if recover else b""))
    pieces = list(segments.split_streams(source, recover=recover, chunk=1000))
    assert len(pieces) == 5 + recover
    assert set(source.asked) == {1000}
    assert source.answered.count(0) == 1  # the end of the input is read once, not asked again


def test_recovery_finds_a_header_one_byte_on_and_skips_a_false_one_cut_by_a_read(blocked):
    table = segments.index_segments(io.BytesIO(blocked))

    def walk(blob, chunk=7):
        return [(p.index, p.offset, p.data, p.error) for p in _split(blob, recover=True, chunk=chunk)]

    stream0 = blocked[: table[1].offset]
    # one damaged byte, then a good segment at buffer position 1
    assert walk(b"j" + blocked)[:2] == [(0, 0, None, "not an nncompress archive (bad magic)"),
                                        (1, 1, stream0, None)]
    # a false header inside a damaged segment, at every position against the 7-byte reads: once
    # its magic ends a read, it cannot be judged until the next read, and must still be skipped
    expected = [(0, 0, stream0, None), (1, table[1].offset, None, "corrupt archive header (checksum mismatch)"),
                (2, table[2].offset, blocked[table[2].offset : table[3].offset], None)]
    for shift in range(7):
        damaged = bytearray(blocked)
        damaged[table[1].offset + 5] ^= 0x01  # segment 1's header checksum
        middle = table[1].offset + 100 + shift
        damaged[middle : middle + 12] = b"NNC\x1a" + bytes(8)
        assert walk(bytes(damaged))[:3] == expected, shift
    # garbage and then a header cut short at the very end: one damaged piece, to the end
    truncated_header = stream0[:6]
    assert walk(blocked + b"junk" + truncated_header)[5:] == \
        [(5, len(blocked), None, "trailing garbage after the compressed stream")]


def test_the_cores_counted_are_those_this_process_may_use(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 2, 5}, raising=False)
    assert parallel.cpu_count() == 3
    monkeypatch.delattr(os, "sched_getaffinity")  # (macOS, Windows)
    monkeypatch.setattr(os, "cpu_count", lambda: 6)
    assert parallel.cpu_count() == 6
    monkeypatch.setattr(os, "cpu_count", lambda: None)  # unknown: one
    assert parallel.cpu_count() == 1


def test_available_memory_reads_memavailable_then_falls_back(monkeypatch):
    opened = []

    def meminfo(text):
        def fake_open(path, *args, **kwargs):
            opened.append(path)
            if text is None:
                raise FileNotFoundError(path)
            return io.StringIO(text)
        monkeypatch.setattr(parallel, "open", fake_open, raising=False)

    pages = {"SC_AVPHYS_PAGES": 7, "SC_PAGE_SIZE": 4096}
    monkeypatch.setattr(os, "sysconf", lambda name: pages[name])
    meminfo("MemTotal:       16000000 kB\nMemFree:  100 kB\nMemAvailable:    2048 kB\nCached: 5 kB\n")
    assert parallel.available_memory() == 2048 << 10
    assert opened == ["/proc/meminfo"]
    meminfo("MemTotal:       16000000 kB\n")  # an old kernel without MemAvailable
    assert parallel.available_memory() == 7 * 4096
    meminfo(None)  # no /proc
    assert parallel.available_memory() == 7 * 4096

    def no_sysconf(name):
        raise ValueError(name)

    monkeypatch.setattr(os, "sysconf", no_sysconf)
    assert parallel.available_memory() is None


def test_worker_memory_and_the_plan_with_the_memory_found(monkeypatch):
    from nncompress.codec import model_memory
    from nncompress.presets import params_for_level

    params = params_for_level(1)
    assert parallel.worker_memory(params, 5000) == model_memory(params) + 3 * 5000 + (150 << 20)
    per_worker = parallel.worker_memory(params, 5000) + 5000
    monkeypatch.setattr(parallel, "cpu_count", lambda: 8)
    monkeypatch.setattr(parallel, "available_memory", lambda: 5 * per_worker - 1)
    assert parallel.plan_workers(0, params, 5000) == 4  # every core, as many as fit
    assert parallel.plan_workers(3, params, 5000) == 3
    assert parallel.plan_workers(6, params, 5000, available=per_worker * 6) == 6  # exactly fits
    assert parallel.plan_workers(6, params, 5000, available=per_worker * 6 - 1) == 5
    monkeypatch.setattr(parallel, "available_memory", lambda: None)  # unknown: no cap
    assert parallel.plan_workers(0, params, 5000) == 8 and parallel.plan_workers(1, params, 5000) == 1
    with pytest.raises(ValueError) as refused:
        parallel.plan_workers(-1, params, 5000)
    assert str(refused.value) == "the number of threads must be >= 0"


def test_write_all_completes_short_writes_and_refuses_no_progress():
    class Short:
        def __init__(self, answer=None):
            self.data, self.calls, self.answer = bytearray(), 0, answer

        def write(self, view):
            self.calls += 1
            if self.answer is not None:
                return self.answer
            self.data += view[:3]
            return min(3, len(view))

    sink = Short()
    parallel._write_all(sink, b"0123456789")
    assert (bytes(sink.data), sink.calls) == (b"0123456789", 4)
    stuck = Short(answer=0)
    with pytest.raises(OSError) as refused:
        parallel._write_all(stuck, b"abc")
    assert str(refused.value) == "write made no progress" and stuck.calls == 1

    class NonBlocking:  # a raw stream that would block answers None: given up, as io does
        calls = 0

        def write(self, view):
            self.calls += 1

    unready = NonBlocking()
    parallel._write_all(unready, b"abc")
    assert unready.calls == 1


def test_a_dead_worker_surfaces_as_worker_lost_word_for_word():
    import concurrent.futures as cf
    from concurrent.futures.process import BrokenProcessPool

    broken = cf.Future()
    broken.set_exception(BrokenProcessPool("gone"))
    with pytest.raises(parallel.WorkerLost) as lost:
        parallel._checked(broken)
    assert str(lost.value) == "a worker process died (gone); output abandoned, input kept"
    assert isinstance(lost.value, NNCError)
    failed = cf.Future()
    failed.set_exception(NNCError("damaged"))
    assert parallel._checked(failed) is failed  # other errors are the caller's to read
    cancelled = cf.Future()
    cancelled.cancel()
    assert parallel._checked(cancelled) is cancelled


def test_whole_buffer_pipeline_in_one_process(text, archive):
    """parallel.compress_bytes / decompress_bytes (what compress(threads=...) calls), here with
    one worker: the engine is this process, the bytes those of compress()."""
    from nncompress.model.params import ModelParams

    assert parallel.compress_bytes(text, 1, segment_size=SEG) == archive
    small = text[:5000]
    packed = nncompress.compress(small, 1, segment_size=4096, block_size=1000)
    assert parallel.compress_bytes(memoryview(small), 1, segment_size=4096, block_size=1000) == packed
    custom = ModelParams(contexts=(1, 2), table_bits=12, history_bits=12, match_bits=10)
    assert parallel.compress_bytes(small, 6, params=custom) == nncompress.compress(small, params=custom)
    assert parallel.decompress_bytes(archive) == text
    assert parallel.decompress_bytes(bytearray(packed)) == small
    with pytest.raises(NNCError) as refused:
        parallel.decompress_bytes(packed[:-1])
    at = segments.index_segments(io.BytesIO(packed))[1].offset
    assert str(refused.value) == \
        f"segment 1 (at byte {at} of the archive): compressed data ended before the end of the stream (truncated)"


def test_close_engine_aborts_only_a_local_pool_and_only_when_told(monkeypatch):
    calls = []
    pool = parallel.LocalEngine(2)
    monkeypatch.setattr(pool, "close", lambda abort=False: calls.append(("pool", abort)))

    class Other:
        def close(self):
            calls.append("other")

    parallel.close_engine(pool, True)
    parallel.close_engine(pool, False)
    parallel.close_engine(pool)
    parallel.close_engine(Other(), True)
    assert calls == [("pool", True), ("pool", False), ("pool", False), "other"]


def test_whole_buffer_pipeline_plans_its_engine_from_its_arguments(monkeypatch):
    from nncompress.model.params import ModelParams
    from nncompress.presets import params_for_level

    made, closed = [], []
    monkeypatch.setattr(parallel, "make_engine", lambda *a, **k: made.append((a, k)) or parallel.SerialEngine())
    monkeypatch.setattr(parallel, "close_engine", lambda engine, abort=False: closed.append(abort))
    client = object()
    data = b"plan the engine " * 20
    parallel.compress_bytes(data, 2, threads=3, client=client, segment_size=4096)
    custom = ModelParams(contexts=(1, 2), table_bits=12, history_bits=12, match_bits=10)
    parallel.compress_bytes(data, 6, params=custom, threads=0)
    parallel.decompress_bytes(nncompress.compress(data, 1), threads=5, client=client)
    assert made == [((3, client), {"params": params_for_level(2), "segment_size": 4096}),
                    ((0, None), {"params": custom, "segment_size": segments.DEFAULT_SEGMENT_SIZE}),
                    ((5, client), {})]
    with pytest.raises(NNCError):
        parallel.decompress_bytes(b"garbage!")
    with pytest.raises(ValueError):
        parallel.compress_bytes(data, 1, segment_size=4096, block_size=0)
    assert closed == [False, False, False, True, True]  # aborted when the work failed


def test_the_pipeline_sizes_each_segments_model_as_the_streaming_compressor_does(text):
    """Without a declared size (a pipe), a segment that fits in a block is fitted to its length
    (as NNCompressor streaming does); with one, every segment is fitted to what is left; a
    single segment starts at input offset 0."""
    data = text[:9000]  # segments of 4096, 4096 and 808 bytes; blocks of 3,000
    for size in (None, len(data)):
        sink = io.BytesIO()
        parallel.compress_stream(io.BytesIO(data), sink, parallel.SerialEngine(), level=1, segment_size=4096,
                                 block_size=3000, size=size)
        streaming = nncompress.NNCompressor(1, segment_size=4096, block_size=3000, size=size)
        assert sink.getvalue() == streaming.compress(data) + streaming.flush()
    one = io.BytesIO()  # (over a block, so that only the declared size can fit its model)
    parallel.compress_stream(io.BytesIO(data[:3000]), one, parallel.SerialEngine(), level=1, block_size=1000,
                             size=3000)
    assert one.getvalue() == nncompress.compress(data[:3000], 1, block_size=1000)


def test_make_engine_plans_local_workers_or_takes_the_cluster(monkeypatch):
    from nncompress import cluster
    from nncompress.presets import params_for_level

    planned = []
    answer = {"workers": 1}
    monkeypatch.setattr(parallel, "plan_workers", lambda *a: planned.append(a) or answer["workers"])
    assert isinstance(parallel.make_engine(), parallel.SerialEngine)
    answer["workers"] = 2
    engine = parallel.make_engine(4, params=params_for_level(1), segment_size=8192)
    assert isinstance(engine, parallel.LocalEngine) and engine.slots == 2
    assert planned == [(1, params_for_level(6), segments.DEFAULT_SEGMENT_SIZE), (4, params_for_level(1), 8192)]

    class FakeDaskEngine:
        def __init__(self, client):
            self.client = client

    monkeypatch.setattr(cluster, "DaskEngine", FakeDaskEngine)
    client = object()
    engine = parallel.make_engine(4, client)
    assert isinstance(engine, FakeDaskEngine) and engine.client is client and len(planned) == 2


def test_ordered_futures_keeps_one_job_more_than_the_slots_in_flight_and_cancels_the_rest():
    import concurrent.futures as cf

    class Engine:
        slots = 2

        def __init__(self):
            self.submitted, self.cancelled = [], []

        def submit(self, fn, *args):
            self.submitted.append(args[0])
            future = cf.Future()
            future.set_result(fn(*args))
            return future

        def cancel(self, futures):
            self.cancelled.append([f.result() for f in futures])

    engine = Engine()
    futures = parallel.ordered_futures(engine, lambda x: x * 10, ((i,) for i in range(6)))
    first = next(futures)
    assert first.result() == 0 and engine.submitted == [0, 1, 2]  # slots + 1 in flight
    assert next(futures).result() == 10 and engine.submitted == [0, 1, 2, 3]
    assert [f.result() for f in futures] == [20, 30, 40, 50] and engine.cancelled == []
    engine = Engine()
    futures = parallel.ordered_futures(engine, lambda x: x * 10, ((i,) for i in range(6)))
    next(futures)
    futures.close()  # the caller stops early (an error): the jobs still in flight are cancelled
    assert engine.cancelled == [[10, 20]]


class _RecordingEngine:
    """Runs each job at once, like SerialEngine, and records what was sent and cancelled."""

    def __init__(self, slots):
        self.slots, self.sent, self.cancelled = slots, [], []

    def submit(self, fn, *args):
        self.sent.append((fn, args))
        return parallel.SerialEngine().submit(fn, *args)

    def cancel(self, futures):
        self.cancelled.extend(futures)


def test_file_prefetcher_sends_small_regular_files_ahead_in_order(tmp_path, monkeypatch):
    from nncompress.presets import params_for_level

    monkeypatch.chdir(tmp_path)
    files = {"a": b"a" * 100, "b": b"b" * 200, "c": b"c" * 300, "-": b"not standard input", "big": b"x" * 513}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    (tmp_path / "locked").write_bytes(b"unreadable")
    (tmp_path / "grown").write_bytes(b"g" * 100)  # grows past the limit once its size was seen
    os.mkdir(tmp_path / "folder")
    asked = []

    class Recorded(io.BytesIO):
        def read(self, size=-1):
            asked.append(size)
            return super().read(size)

    def recorded_open(name, mode="r"):
        if name == "locked":
            raise PermissionError(errno.EACCES, "Permission denied", name)
        with open(name, mode) as f:
            return Recorded(f.read() * (6 if name == "grown" else 1))

    monkeypatch.setattr(parallel, "open", recorded_open, raising=False)
    names = ["-", "a", "a", "/dev/null", "folder", "missing", "locked", "big", "grown", "b", "c"]
    engine = _RecordingEngine(slots=1)
    params = params_for_level(1)
    prefetch = parallel.FilePrefetcher(engine, names, "compress", 512, level=2, params=params, block_size=4096)
    # slots + 1 files ahead; standard input, a repeated name, devices, folders, missing files and
    # files over the limit are left to the command line
    assert engine.sent == [(parallel.compress_job, (files["a"], 2, params, 4096, 100)),
                           (parallel.compress_job, (files["b"], 2, params, 4096, 200))]
    assert asked == [513, 513, 513]  # a, grown, b: one byte past the limit, whatever the file holds now
    expected = parallel.compress_job(files["a"], 2, params, 4096, 100)
    assert prefetch.take("a", files["a"]) == expected
    assert [args[0] for _, args in engine.sent] == [files["a"], files["b"], files["c"]]  # refilled
    assert prefetch.take("a", files["a"]) is None  # already taken
    assert prefetch.take("b", b"changed") is None and len(engine.cancelled) == 1
    prefetch.close()
    assert len(engine.cancelled) == 2 and prefetch.take("c", files["c"]) is None
    archive = nncompress.compress(files["a"], 1)
    (tmp_path / "a.nnc").write_bytes(archive)
    engine = _RecordingEngine(slots=3)
    prefetch = parallel.FilePrefetcher(engine, ["a.nnc"], "decompress", 512)
    assert engine.sent == [(parallel.decompress_file_job, (archive,))]
    assert prefetch.take("a.nnc", archive) == files["a"]


def test_prepended_reads_the_head_then_the_source_in_every_way():
    for everything in (None, -1):
        reader = parallel.Prepended(b"abc", io.BytesIO(b"def"))
        assert reader.read(everything) == b"abcdef" and reader.read(everything) == b""
    reader = parallel.Prepended(b"abc", io.BytesIO(b"def"))
    assert reader.read(0) == b"" and reader.read() == b"abcdef"
    reader = parallel.Prepended(b"abc", io.BytesIO(b"def"))
    assert reader.read(3) == b"abc" and reader.read(1) == b"d" and reader.read() == b"ef"
    assert parallel.Prepended(b"", io.BytesIO(b"xy")).read(5) == b"xy"


def test_compress_segment_writes_the_stream_it_is_asked_for(text):
    """Every option reaches the segment's stream: version, block size, preset, model size."""
    from nncompress.format import parse_header

    data = text[:2500]
    header = parse_header(segments.compress_segment(data, 1, block_size=1000, format_version=1))[0]
    assert (header.version, header.block_size, header.level) == (1, 1000, 1)
    header = parse_header(segments.compress_segment(data, 1, preset_id=2))[0]
    assert (header.version, header.preset) == (2, 2)  # preset 2 (level 2's), not level 1's
    assert parse_header(segments.compress_segment(data, 1, block_size=1000, size=2500))[0].overrides  # fitted
    assert not parse_header(segments.compress_segment(data, 1, block_size=1000))[0].overrides  # full size
    from nncompress.model.params import ModelParams

    custom = ModelParams(contexts=(1, 2), table_bits=12, history_bits=12, match_bits=10)
    header = parse_header(segments.compress_segment(data, 6, custom))[0]
    assert header.preset == 0 and ModelParams.from_ints(list(header.params)) == custom


def test_fitted_size_at_its_bounds():
    # no declared size: a segment of at most one block is in hand, so fitted to its length
    assert segments.fitted_size(1000, 0, None, 1000, None) == 1000
    assert segments.fitted_size(1001, 0, None, 1000, None) is None
    assert segments.fitted_size(None, 0, None, 1000, 4096) is None
    # a declared size: what is left of it from the segment's start, at most a segment
    assert segments.fitted_size(None, 5000, 12000, 1000, 4096) == 4096
    assert segments.fitted_size(4096, 8192, 9000, 1000, 4096) == 808
    assert segments.fitted_size(None, 3000, 10000, 1000, None) == 7000
    assert segments.fitted_size(100, 9000, 9000, 1000, 4096) == 0
    assert segments.fitted_size(100, 9001, 9000, 1000, 4096) is None  # grew past the declared size


def test_bad_parameters_fail_when_the_compressor_is_made():
    from nncompress.model.params import ModelParams

    bad = ModelParams(contexts=(), table_bits=12, history_bits=12, match_bits=10)
    good = ModelParams(contexts=(1, 2), table_bits=12, history_bits=12, match_bits=10)
    for args, options, message in (((1, bad), {}, "contexts are supported"),
                                   ((1,), {"block_size": 0}, "block_size must be in"),
                                   ((1,), {"format_version": 7}, "format_version must be one of"),
                                   ((1, good), {"preset_id": 2}, "give params or preset_id, not both")):
        with pytest.raises(ValueError) as refused:
            segments.SegmentedCompressor(*args, **options)  # at once, before any input
        assert message in str(refused.value)


def test_segmented_compressor_counts_its_completed_segments(text):
    compressor = segments.SegmentedCompressor(1, block_size=1000, segment_size=4096)
    assert compressor.segments == 0
    out = compressor.compress(text[:9000])  # two segments complete once the third has begun
    assert compressor.segments == 2
    out += compressor.flush()
    assert compressor.segments == 3
    assert nncompress.decompress(out) == text[:9000]


def test_a_block_is_written_as_soon_as_it_is_known_to_be_its_streams_last(text):
    # input ending exactly at a block: held until flush() says no other block follows
    compressor = segments.SegmentedCompressor(1, block_size=1000, segment_size=None)
    held = compressor.compress(text[:1000])
    assert held == b"" and held + compressor.flush() == one_stream(text[:1000], block_size=1000)
    # input ending exactly at a segment: its last block is known to be last and goes out at once,
    # only the trailer waits (for more input or flush)
    compressor = segments.SegmentedCompressor(1, block_size=1000, segment_size=4096, size=4096)
    out = compressor.compress(text[:4096])
    trailer = compressor.flush()
    assert out + trailer == one_stream(text[:4096], block_size=1000)
    assert len(trailer) == 6  # the segment's length (a 2-byte varint) and its CRC-32


def test_an_empty_input_is_one_empty_stream_made_as_asked():
    from nncompress.format import parse_header
    from nncompress.model.params import ModelParams

    def empty(size=None, **options):
        encoder = StreamEncoder(**options, size=size)
        return encoder.header() + encoder.end()

    assert segments.SegmentedCompressor(1).flush() == empty(level=1, size=0) == nncompress.compress(b"", 1)
    # a declared size the input did not fill (a file that shrank): the model sized as declared
    assert segments.SegmentedCompressor(1, size=100_000).flush() == empty(level=1, size=100_000)
    assert segments.SegmentedCompressor(1, segment_size=4096, size=100_000).flush() == empty(level=1, size=4096)
    header = parse_header(segments.compress_segment(b"", 1, block_size=1000, format_version=1))[0]
    assert (header.version, header.block_size) == (1, 1000)
    assert parse_header(segments.compress_segment(b"", 1, preset_id=2))[0].preset == 2
    custom = ModelParams(contexts=(1, 2), table_bits=12, history_bits=12, match_bits=10)
    assert segments.compress_segment(b"", 6, custom) == empty(params=custom, size=0)


def test_compress_segment_makes_one_stream_however_long_its_input(monkeypatch):
    made = []

    class Recording(segments.SegmentedCompressor):
        def __init__(self, *args, **options):
            made.append(options["segment_size"])
            super().__init__(*args, **options)

    monkeypatch.setattr(segments, "SegmentedCompressor", Recording)
    stream = segments.compress_segment(b"one stream " * 100, 1, block_size=300)
    assert made == [None]  # no cut at the default segment size, whatever --segment-size was
    assert segments.decompress_segment(stream) == b"one stream " * 100


class _FakeProcess:
    def __init__(self, calls, name, alive):
        self.calls, self.name, self.alive = calls, name, alive

    def is_alive(self):
        return self.alive

    def terminate(self):
        self.calls.append(("terminate", self.name))

    def join(self, timeout=None):
        self.calls.append(("join", self.name, timeout))


class _FakePool:
    """Stands in for ProcessPoolExecutor: records how it is made, used and shut down."""

    made = []

    def __init__(self, workers, mp_context=None, initializer=None):
        self.calls, self._broken = [], False
        self._processes = {1: _FakeProcess(self.calls, "p1", True), 2: _FakeProcess(self.calls, "p2", False)}
        _FakePool.made.append((self, workers, mp_context.get_start_method(), initializer))

    def submit(self, fn, *args):
        self.calls.append(("submit", fn, args))
        return "future"

    def shutdown(self, wait=True, cancel_futures=False):
        self.calls.append(("shutdown", wait, cancel_futures))


def test_local_engine_starts_its_pool_on_first_use_and_closes_or_aborts_it(monkeypatch):
    import multiprocessing

    monkeypatch.setattr(parallel.cf, "ProcessPoolExecutor", _FakePool)
    _FakePool.made = []
    engine = parallel.LocalEngine(3)
    assert engine.slots == 3 and not _FakePool.made  # nothing started yet
    assert engine.submit(len, b"abc") == "future" and engine.submit(abs, -1) == "future"
    (pool, workers, method, initializer), = _FakePool.made  # one pool for every job
    expected = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    assert (workers, method, initializer) == (3, expected, parallel._ignore_sigint)
    assert pool.calls == [("submit", len, (b"abc",)), ("submit", abs, (-1,))]
    engine.close()  # a normal end: wait for the workers
    assert pool.calls[2:] == [("shutdown", True, False)]
    engine.close()  # closing twice: nothing more
    assert len(pool.calls) == 3
    engine.submit(len, b"")
    pool = _FakePool.made[-1][0]
    engine.close(abort=True)  # interrupted: cancel, stop the live workers, wait a little
    assert pool.calls[1:] == [("shutdown", False, True), ("terminate", "p1"), ("join", "p1", 5), ("join", "p2", 5)]
    engine.submit(len, b"")
    pool = _FakePool.made[-1][0]
    pool._broken = True  # a worker died: the next job gets a fresh pool, the old one is aborted
    engine.submit(len, b"x")
    assert ("shutdown", False, True) in pool.calls and len(_FakePool.made) == 4
    assert _FakePool.made[-1][0].calls == [("submit", len, (b"x",))]
    # an executor without those private attributes (another Python's): never taken for broken,
    # and aborted without a list of processes
    engine = parallel.LocalEngine(2)
    engine.submit(len, b"")
    pool = _FakePool.made[-1][0]
    del pool._broken, pool._processes
    engine.submit(len, b"y")
    assert _FakePool.made[-1][0] is pool and len(pool.calls) == 2
    engine.close(abort=True)
    assert pool.calls[2:] == [("shutdown", False, True)]
    # a platform without forkserver (Windows): spawn
    monkeypatch.setattr(multiprocessing, "get_all_start_methods", lambda: ["spawn"])
    parallel.LocalEngine(2).submit(len, b"")
    assert _FakePool.made[-1][2] == "spawn"


def test_workers_ignore_ctrl_c():
    import signal as signals

    saved = signals.getsignal(signals.SIGINT)
    try:
        parallel._ignore_sigint()
        assert signals.getsignal(signals.SIGINT) is signals.SIG_IGN
    finally:
        signals.signal(signals.SIGINT, saved)


def test_segment_index_reads_a_header_longer_than_its_first_read():
    """The index reads 1,024 bytes for a header and doubles the read until the header fits.  Since
    headers may list 128 parameters (format.MAX_PARAMS), a hostile or future one can pass 1 KiB:
    the read must grow (not loop, not report truncation) and parse it whole."""
    params = tuple([1 << 62] * fmt.MAX_PARAMS)  # 9-byte varints: a 1,167-byte header
    head = fmt.Header(1, 0, params, 1 << 20).encode()
    assert len(head) > 1024
    (entry,) = segments.index_segments(io.BytesIO(head + fmt.encode_end(0, 0)))
    assert entry.header.params == params
