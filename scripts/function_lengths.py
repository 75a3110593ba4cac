#!/usr/bin/env python3
"""Lists the functions longer than a limit in C/C++/CUDA sources.

Usage: function_lengths.py [--max N] FILE...
Prints "file:line: name has L lines" per function past N (60) lines, and exits 1 if there is one.
There is no allow-list: a function past the limit is split into named steps.

A function is a brace-enclosed body whose header (the text since the previous ';', '{' or '}' at
the same depth) ends in ')' plus optional qualifiers, and that is not a control statement, an
aggregate or an initialiser. Length counts the lines from the header's first line to the closing
brace, as a reader scrolls them. Lambdas and local classes count towards the function they are in.
It is a text scanner, not a compiler: comments, strings and character literals are blanked first
so that braces inside them do not count.
"""
import re
import sys

CONTROL = {"if", "for", "while", "switch", "catch", "do", "else", "return", "sizeof", "decltype", "alignof"}
SCOPES = re.compile(r"\b(namespace|class|struct|union|enum)\b[^()]*$")
QUALIFIERS = re.compile(r"\)\s*(const|noexcept|override|final|volatile|&|&&|mutable|->\s*[\w:<>,\s*&]+|\s)*$")


def blank(text):
    """Comments, strings and character literals become spaces (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(]*)\(', text[i:])
            end = text.find(")" + m.group(1) + '"', i) if m else -1
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'" and not (c == "'" and i > 0 and text[i - 1].isalnum()):
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(" " * (min(j + 1, n) - i))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def header_is_function(header):
    h = " ".join(header.split())
    if not h.endswith(")") and not QUALIFIERS.search(h):
        return False
    if re.search(r"(^|[^=!<>])=($|[^=])", h.split("(")[0]):  # an initialiser: x = f(...) {
        return False
    if SCOPES.search(h.split("(")[0]):
        return False
    words = re.findall(r"[A-Za-z_]\w*", h.split("(")[0])
    if not words or words[-1] in CONTROL or words[0] in CONTROL:
        return False
    # A macro-like all-caps call before a block (WEFT_TRY(...) {) is not a definition.
    return True


def long_functions(path, limit):
    text = blank(open(path, encoding="utf-8", errors="replace").read())
    found, stack, header_start, header = [], [], 0, []
    line = 1
    for ch in text:
        if ch == "{":
            in_function = any(kind == "function" for kind, _, _ in stack)
            h = "".join(header)
            if not in_function and header_is_function(h):
                name = re.findall(r"([~\w:]+)\s*\(", h)
                stack.append(("function", header_start, name[0] if name else "?"))
            else:
                stack.append(("block", line, ""))
            header, header_start = [], line
        elif ch == "}":
            if stack:
                kind, start, name = stack.pop()
                if kind == "function" and line - start + 1 > limit:
                    found.append((start, name, line - start + 1))
            header, header_start = [], line
        elif ch == ";":
            header, header_start = [], line
        else:
            if not "".join(header).strip() and not ch.isspace():
                header_start = line
            header.append(ch)
        if ch == "\n":
            line += 1
    return found


def main(argv):
    limit = 60
    while len(argv) >= 2 and argv[0] == "--max":
        limit = int(argv[1])
        argv = argv[2:]
    bad = 0
    for path in argv:
        for start, name, n in long_functions(path, limit):
            print(f"{path}:{start}: {name} has {n} lines (at most {limit})")
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
