#!/usr/bin/python3
"""Checks that every function in sim/ and algorithms/ reads in one screen (at most 100 lines).

A function's length runs from the line of its name to the line of its closing brace, lambdas and
local classes inside it included. The scanner matches braces after blanking comments, string and
character literals and preprocessor lines, so it needs no compiler.
  check_function_lengths.py [ROOT]            exit 1 and list every function over 100 lines
  check_function_lengths.py --list N [ROOT]   list every function over N lines, longest first
  check_function_lengths.py --self-test       checks the scanner on a scratch file
"""
import pathlib
import re
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from check_layers import sources  # noqa: E402  (the same files the layer check reads)

LIMIT = 100

# Functions over the limit that changes under way elsewhere in the tree are cutting into stages:
# (folder or file, function name). Remove a line when its function is cut: a line that matches no
# long function fails the check, so the list cannot outlive its reason.
EXEMPT: set = set()

KEYWORDS_NOT_FUNCTIONS = {"if", "for", "while", "switch", "catch", "return", "sizeof", "decltype",
                          "alignof", "static_assert", "noexcept", "throw"}
HEADER_TAILS = re.compile(r"(\s|const\b|noexcept\b|override\b|final\b|mutable\b|&|->[^{;]*)*$")


def blank_noncode(text):
    """Comments, literals and preprocessor lines become spaces; newlines stay, so lines still count."""
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c == "#":
            # a directive runs to the end of the line, continued by a trailing backslash
            while i < n and not (text[i] == "\n" and text[i - 1] != "\\"):
                out.append("\n" if text[i] == "\n" else " ")
                i += 1
            continue
        if c == "\n":
            line_start = True
            out.append(c)
            i += 1
            continue
        if not c.isspace():
            line_start = False
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
        elif c == "R" and text.startswith('"', i + 1) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            open_paren = text.find("(", i + 2)
            delimiter = text[i + 2:open_paren]
            j = text.find(")" + delimiter + '"', open_paren)
            j = n if j < 0 else j + len(delimiter) + 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum():
                out.append(c)  # a digit separator (1'000'000)
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(" " * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def strip_parens(header):
    """The header without what its parentheses and angle-free brackets hold."""
    depth, kept = 0, []
    for c in header:
        if c == "(":
            if depth == 0:
                kept.append("(")
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                kept.append(")")
        elif depth == 0:
            kept.append(c)
    return "".join(kept)


def function_name(header):
    """The name before the parameter list of a function header, or None when it is no function."""
    flat = strip_parens(header)
    if re.search(r"\boperator\b", flat):
        match = re.search(r"(\w+::)*operator\s*(\(\)|[^\s(]+)\s*\(\)", flat)
        return match.group(0)[:-2].replace(" ", "") if match else None
    # a lambda stored in a variable at namespace scope is a function under the variable's name
    lambda_match = re.search(r"(\w+)\s*=\s*\[[^\]]*\]\s*(\(\))?[^=]*$", flat)
    if lambda_match:
        return lambda_match.group(1)
    if "=" in flat.replace("->", ""):
        return None  # a variable's initializer
    match = re.search(r"([~\w]+)\s*\(\)\s*$", flat[:len(flat) - len(HEADER_TAILS.search(flat).group(0))] + "")
    if not match or match.group(1) in KEYWORDS_NOT_FUNCTIONS:
        return None
    return match.group(1)


def functions(text):
    """(name, first line, last line) of every function defined at namespace or class scope."""
    code = blank_noncode(text)
    found = []
    stack = []  # one entry per open brace: "scope" (namespace, class, extern), "function" or "other"
    header_start = 0  # where the text since the last ; { or } at scope level begins
    function_open = None  # (name, line) of the function whose body is open at stack depth
    initializer = None  # name and line of a constructor whose member initializer list is open
    i = 0
    while i < len(code):
        c = code[i]
        at_scope = all(kind == "scope" for kind in stack)
        if c == "{":
            if not at_scope:
                stack.append("other")
            else:
                header = code[header_start:i]
                flat = strip_parens(header)
                if initializer is not None:
                    before = header.rstrip()[-1:] if header.rstrip() else ""
                    if before in (")", "}") and re.search(r"[)}]\s*$", flat):
                        # the body follows the last member initializer
                        stack.append("function")
                        function_open = initializer
                        initializer = None
                    else:
                        stack.append("other")  # a member initialized with braces: x_{a}
                    i += 1
                    continue
                if re.search(r"\b(namespace|class|struct|union|enum)\b[^()]*$", flat) or re.search(r'\bextern\s*$', flat):
                    stack.append("scope" if not re.search(r"\benum\b", flat) else "other")
                else:
                    name = function_name(header)
                    if name is None:
                        stack.append("other")
                    else:
                        name_at = header_start + header.rfind(name.split("::")[-1]) if name.split("::")[-1] in header else header_start
                        stack.append("function")
                        function_open = (name, code.count("\n", 0, name_at) + 1)
                header_start = i + 1
        elif c == "}":
            kind = stack.pop() if stack else "scope"
            if kind == "function" and all(k == "scope" for k in stack):
                name, first = function_open
                found.append((name, first, code.count("\n", 0, i) + 1))
                function_open = None
            if all(k == "scope" for k in stack):
                header_start = i + 1
        elif c == ";" and at_scope:
            header_start = i + 1
            initializer = None
        elif c == ":" and at_scope and initializer is None:
            # `Name(args) :` opens a constructor's member initializer list (not `::`, not `? :`)
            if code[i + 1:i + 2] != ":" and code[i - 1:i] != ":":
                flat = strip_parens(code[header_start:i])
                match = re.search(r"([~\w]+)\s*\(\)\s*(noexcept\s*)?$", flat)
                if match and match.group(1) not in KEYWORDS_NOT_FUNCTIONS:
                    name_at = header_start + code[header_start:i].rfind(match.group(1))
                    initializer = (match.group(1), code.count("\n", 0, name_at) + 1)
        i += 1
    return found


def long_functions(root, limit):
    result = []
    for relative, text in sources(root):
        for name, first, last in functions(text):
            if last - first + 1 > limit:
                result.append((last - first + 1, relative, first, name))
    return sorted(result, key=lambda r: (-r[0], r[1], r[2]))


def length_problems(found, exempt):
    """What is wrong with the functions `found` (long_functions at LIMIT), given the exemptions."""
    def exemption(path, name):
        return next((e for e in exempt if path.startswith(e[0]) and name == e[1]), None)

    problems = [f"{path}:{line}: {name} is {length} lines, more than {LIMIT}; cut it into named stages"
                for length, path, line, name in found if exemption(path, name) is None]
    used = {exemption(path, name) for _, path, _, name in found}
    problems += [f"{where}: {name} is exempt but no function of that name is over {LIMIT} lines there; "
                 "remove it from EXEMPT" for where, name in sorted(set(exempt) - used)]
    return problems


def self_test():
    source = '''
namespace a {
const char* s = "{ not a brace";  // nor { this
struct S {
  S(int x) : x_{x}, y_(x) {
    if (x) { x_ = 2; }
  }
  int get() const { return x_; }
  int x_{0}, y_;
};
const int table[] = {1, 2, 3};
enum class E : int { one, two };
int body(int n) {
  auto f = [&](int m) {
    return m + n;
  };
  return f(/* } */ n);
}
bool operator==(const S& l, const S& r) { return l.x_ == r.x_; }
}  // namespace a
#define BRACE {
auto stored = [](int v) {
  return v;
};
'''
    got = [(name, first, last) for name, first, last in functions(source)]
    expected = [("S", 5, 7), ("get", 8, 8), ("body", 13, 18), ("operator==", 19, 19), ("stored", 22, 24)]
    if got != expected:
        print(f"self-test: expected {expected}, got {got}")
        return 1
    with tempfile.TemporaryDirectory() as scratch:
        root = pathlib.Path(scratch)
        (root / "sim/core").mkdir(parents=True)
        (root / "algorithms").mkdir()
        (root / "sim/core/long.cpp").write_text("void f() {\n" + "  g();\n" * 99 + "}\n")
        (root / "algorithms/short.cpp").write_text("void h() {\n" + "  g();\n" * 98 + "}\n")
        found = long_functions(root, LIMIT)
        if found != [(101, "sim/core/long.cpp", 1, "f")]:
            print(f"self-test: expected the 101-line function alone, got {found}")
            return 1
        if len(length_problems(found, set())) != 1 or length_problems(found, {("sim/core/", "f")}):
            print("self-test: the long function was not reported, or reported though exempt")
            return 1
        stale = length_problems(found, {("sim/core/", "f"), ("algorithms/", "h")})
        if len(stale) != 1 or "algorithms/: h is exempt" not in stale[0]:
            print(f"self-test: expected the exemption of a short function to be reported, got {stale}")
            return 1
    print("self-test: ok")
    return 0


def main(argv):
    args = argv[1:]
    if args == ["--self-test"]:
        return self_test()
    limit = LIMIT
    listing = False
    if args[:1] == ["--list"]:
        listing, limit, args = True, int(args[1]), args[2:]
    root = args[0] if args else pathlib.Path(__file__).resolve().parents[2]
    found = long_functions(root, limit)
    if listing:
        for length, path, line, name in found:
            print(f"{length:4d}  {path}:{line}  {name}")
        print(f"{len(found)} function(s) over {limit} lines")
        return 0
    problems = length_problems(found, EXEMPT)
    for line in problems:
        print(line)
    print(f"{len(problems)} problem(s) with function lengths" if problems
          else f"functions: none over {LIMIT} lines (besides {len(EXEMPT)} being cut)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
