"""The command line every checker of this folder shares: `check_X.py [ROOT]` lists what it finds
under ROOT (by default the checkout holding this folder) and exits 1 if anything; `check_X.py
--self-test` shows on a scratch tree that it finds what it should."""
import pathlib


def run(argv, find, self_test, summary=None):
    """find(root) -> findings (lines); summary(count) -> a last line to print, or None."""
    if argv[1:] == ["--self-test"]:
        return self_test()
    root = argv[1] if len(argv) > 1 else pathlib.Path(__file__).resolve().parents[2]
    found = find(root)
    for line in found:
        print(line)
    if summary:
        print(summary(len(found)))
    return 1 if found else 0


def self_test_result(found, expected, what):
    """The self-test's exit code once its scratch tree is read: 0 if `found` is `expected`."""
    if found != expected:
        print(f"self-test: expected {what} to be reported, got {found}")
        return 1
    print("self-test: ok")
    return 0
