#!/usr/bin/python3
"""Checks that no Catch2 test name holds a ';'.

ctest learns the test names from the test programs as a CMake list, which ';' splits: a test named
"a; b" becomes two tests, "a" and " b", that match no test case, and both pass without running
anything.
  check_test_names.py ROOT     exit 1 and print every such name under ROOT/tests
"""
import pathlib
import re
import sys

# TEST_CASE("first part" "second part", "[tags]"): the adjacent literals make the name.
NAME = re.compile(r'TEST_CASE\s*\(\s*((?:"(?:[^"\\]|\\.)*"\s*)+)', re.MULTILINE)


def bad_names(root):
    found = []
    for source in sorted((pathlib.Path(root) / "tests").rglob("*.cpp")):
        text = source.read_text(encoding="utf-8")
        for match in NAME.finditer(text):
            name = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', match.group(1)))
            if ";" in name:
                line = text.count("\n", 0, match.start()) + 1
                found.append(f"{source.relative_to(root)}:{line}: test name holds ';': {name}")
    return found


if __name__ == "__main__":
    problems = bad_names(sys.argv[1] if len(sys.argv) > 1 else ".")
    for p in problems:
        print(p)
    sys.exit(1 if problems else 0)
