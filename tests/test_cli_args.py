"""The command line's parser on its own (nncompress.cli_args): every option's spellings and
values, the defaults, usage errors (exit 1, the usage line and one message), --help, --version
and the tools' dispatch.  Nothing is compressed, so every case is cheap."""

import sys
import types

import pytest

from nncompress import DEFAULT_LEVEL, FORMAT_VERSION, __version__, cli_args
from nncompress.cli import main
from nncompress.cli_args import build_parser, run_tool
from nncompress.coder_backend import coder_description
from nncompress.format import DEFAULT_SEGMENT_SIZE

DEFAULTS = dict(mode=None, stdout=False, output=None, keep=False, rm=False, force=False,
                no_name=False, level=None, model="cm", json=False, threads=1,
                segment_size=DEFAULT_SEGMENT_SIZE, cluster=None, suffix=".nnc", verbose=False,
                quiet=False, files=[])

USAGE = ("usage: nncompress [-h] [-z | -d | -t | -l] [-c] [-o FILE] [-k | --rm] [-f] [-n] "
         "[--fast] [--best] [--level 1..9] [--model NAME[,OPT=V...]] [--json] [-T N] "
         "[--segment-size SIZE] [--cluster ADDRESS] [-S SUFFIX] [-v | -q] [-V] [FILE ...]\n")


@pytest.fixture(autouse=True)
def wide_terminal(monkeypatch):
    """argparse wraps at $COLUMNS: one line per usage, whatever the terminal."""
    monkeypatch.setenv("COLUMNS", "1000")


def parsed(argv):
    return vars(build_parser().parse_args(argv))


def test_defaults():
    assert parsed([]) == DEFAULTS
    assert cli_args.SUFFIX == ".nnc"
    assert (cli_args.EXIT_OK, cli_args.EXIT_ERROR, cli_args.EXIT_WARNING) == (0, 1, 2)


@pytest.mark.parametrize("spellings, changed", [
    (["-z", "--compress"], dict(mode="compress")),
    (["-d", "--decompress", "--uncompress"], dict(mode="decompress")),
    (["-t", "--test"], dict(mode="test")),
    (["-l", "--list"], dict(mode="list")),
    (["-c", "--stdout", "--to-stdout"], dict(stdout=True)),
    (["-k", "--keep"], dict(keep=True)),
    (["--rm"], dict(rm=True)),
    (["-f", "--force"], dict(force=True)),
    (["-n", "--no-name"], dict(no_name=True)),
    (["--fast", "-1"], dict(level=1)),
    (["--best", "-9"], dict(level=9)),
    (["--json"], dict(json=True)),
    (["-v", "--verbose"], dict(verbose=True)),
    (["-q", "--quiet"], dict(quiet=True)),
])
def test_each_flag_under_each_spelling(spellings, changed):
    for flag in spellings:
        assert parsed([flag]) == {**DEFAULTS, **changed}, flag


@pytest.mark.parametrize("spellings, value, changed", [
    (["-o", "--output"], "out.bin", dict(output="out.bin")),
    (["-S", "--suffix"], ".z", dict(suffix=".z")),
    (["--level"], "4", dict(level=4)),
    (["--model"], "rnnme,hidden=8", dict(model="rnnme,hidden=8")),
    (["-T", "--threads"], "3", dict(threads=3)),
    (["-T", "--threads"], "0", dict(threads=0)),
    (["--segment-size"], "4M", dict(segment_size=4 << 20)),
    (["--segment-size"], "5000", dict(segment_size=5000)),
    (["--cluster"], "tcp://host:8786", dict(cluster="tcp://host:8786")),
])
def test_each_option_with_a_value_under_each_spelling(spellings, value, changed):
    for option in spellings:
        assert parsed([option, value]) == {**DEFAULTS, **changed}, option
        if option.startswith("--"):
            assert parsed([f"{option}={value}"]) == {**DEFAULTS, **changed}, option


def test_levels_and_files():
    for level in range(1, 10):
        assert parsed([f"-{level}"])["level"] == level
        assert parsed(["--level", str(level)])["level"] == level
    assert parsed(["-3", "-7"])["level"] == 7  # the last one wins, as in gzip
    assert parsed(["-d", "a.nnc", "-", "b.nnc"]) == {**DEFAULTS, "mode": "decompress",
                                                    "files": ["a.nnc", "-", "b.nnc"]}
    assert parsed(["--", "-d"]) == {**DEFAULTS, "files": ["-d"]}


@pytest.mark.parametrize("argv, message", [
    (["-d", "-t"], "argument -t/--test: not allowed with argument -d/--decompress/--uncompress"),
    (["-z", "-l"], "argument -l/--list: not allowed with argument -z/--compress"),
    (["-k", "--rm"], "argument --rm: not allowed with argument -k/--keep"),
    (["-v", "-q"], "argument -q/--quiet: not allowed with argument -v/--verbose"),
    (["--level", "0"], "argument --level: invalid choice: 0 (choose from 1, 2, 3, 4, 5, 6, 7, 8, 9)"),
    (["--level", "10"], "argument --level: invalid choice: 10 (choose from 1, 2, 3, 4, 5, 6, 7, 8, 9)"),
    (["-T", "x"], "argument -T/--threads: invalid int value: 'x'"),
    (["--segment-size", "4Q"], "argument --segment-size: invalid parse_size value: '4Q'"),
    (["-o"], "argument -o/--output: expected one argument"),
    (["--frobnicate"], "unrecognized arguments: --frobnicate"),
    (["-Z"], "unrecognized arguments: -Z"),
    (["-0"], "unrecognized arguments: -0"),  # levels are 1 .. 9 under every spelling
    (["-10"], "argument -1: ignored explicit argument '0'"),
])
def test_usage_errors_exit_1_with_the_usage_line_and_one_message(argv, message, capsys):
    with pytest.raises(SystemExit) as stopped:
        build_parser().parse_args(argv)
    assert stopped.value.code == 1  # as gzip, xz and zstd: 2 would mean "warning"
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == USAGE + f"nncompress: {message}\n"


def test_a_bad_model_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["--model=nonsense"])
    assert stopped.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith(USAGE) and err.count("\n") == 2
    assert err.splitlines()[-1].startswith("nncompress: --model: ")


def test_help_lists_every_option_and_states_the_real_defaults(capsys):
    with pytest.raises(SystemExit) as stopped:
        build_parser().parse_args(["--help"])
    assert stopped.value.code == 0
    text = capsys.readouterr().out
    assert text.startswith(USAGE)
    for shown in ("-z, --compress", "-d, --decompress, --uncompress", "-t, --test", "-l, --list",
                  "-c, --stdout, --to-stdout", "-o FILE, --output FILE", "-k, --keep", "--rm",
                  "-f, --force", "-n, --no-name", "--fast", "--best", "--level 1..9",
                  "--model NAME[,OPT=V...]", "--json", "-T N, --threads N",
                  "--segment-size SIZE", "--cluster ADDRESS", "-S SUFFIX, --suffix SUFFIX",
                  "-v, --verbose", "-q, --quiet", "-V, --version", "-h, --help"):
        assert f"  {shown}  " in text or f"  {shown}\n" in text, shown
    listed = [line.split()[0] for line in text.splitlines() if line.startswith("  -")]
    assert not {f"-{level}" for level in range(1, 10)} & set(listed)  # not one by one
    # what the help says about defaults is what the parser does
    flat = " ".join(text.split())
    assert f"(default {DEFAULT_LEVEL})" in flat and DEFAULTS["level"] is None
    assert f"(default {DEFAULT_SEGMENT_SIZE >> 20}M)" in flat
    assert f"(default {DEFAULTS['suffix']})" in flat
    assert f"default {DEFAULTS['threads']})" in flat
    assert "compress (default)" in flat
    assert "parallel work:" in text
    # the subcommands named in the description are the ones main() takes, and the epilog's
    # tools are the tools
    named = flat.split("A subcommand (")[1].split(")")[0].split(", ")
    assert sorted(named) == sorted([*cli_args.ALIASES, *cli_args.TOOLS])
    for tool in cli_args.TOOLS:
        assert f"'nncompress {tool}" in flat


def test_every_option_and_group_is_described():
    """No option in --help without a line saying what it does (-1 .. -9 are hidden on purpose:
    --level's help names them)."""
    parser = build_parser()
    for action in parser._actions:
        if action.option_strings[:1] in ([f"-{level}"] for level in range(1, 10)):
            assert action.help == "==SUPPRESS==", action.option_strings
        elif action.dest != "files":
            assert isinstance(action.help, str) and len(action.help) > 8, action.option_strings
    [parallel] = [group for group in parser._action_groups if group.title == "parallel work"]
    assert "segments" in parallel.description and "-T" in parallel.description


def test_version(capsys):
    with pytest.raises(SystemExit) as stopped:
        build_parser().parse_args(["-V"])
    assert stopped.value.code == 0
    assert " ".join(capsys.readouterr().out.split()) == (
        f"nncompress {__version__} (format {FORMAT_VERSION}; {coder_description()})")


def test_subcommand_aliases():
    assert cli_args.ALIASES == {"compress": [], "decompress": ["-d"], "test": ["-t"],
                                "list": ["-l"]}
    for name, flags in cli_args.ALIASES.items():
        assert parsed(flags)["mode"] == (None if name == "compress" else name)
    assert cli_args.TOOLS == ("bench", "analyze", "demo")


@pytest.mark.parametrize("name, module", [("bench", "benchmark"), ("analyze", "analysis"),
                                          ("demo", "demo")])
def test_each_tool_runs_its_own_main_with_the_rest_of_the_arguments(name, module, monkeypatch):
    calls = []
    for other in ("benchmark", "analysis", "demo"):
        fake = types.ModuleType(f"nncompress.{other}")
        fake.main = lambda argv, other=other: calls.append((other, argv)) or 7
        monkeypatch.setitem(sys.modules, f"nncompress.{other}", fake)
    assert run_tool(name, ["--x", "y"]) == 7
    assert calls == [(module, ["--x", "y"])]
    calls.clear()
    assert main([name, "--x", "y"]) == 7
    assert calls == [(module, ["--x", "y"])]
