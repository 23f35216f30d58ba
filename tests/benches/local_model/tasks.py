"""The task set of the local-model eval: small coding tasks of the kinds a user gives an agent,
each graded by a hidden check that the agent never sees.

Each task has files to put in a fresh directory, the user's prompt, the file a change goes to
(`target`, `None` for a question), and a check: Python code run in the task directory after the
agent (or the model alone) is done, which exits non-zero on failure. A question's check reads the
answer from the file `.answer`.
"""

STUB = 'raise NotImplementedError("not written yet")'


def function_task(name, signature, doc, tests, imports=""):
    """A function whose body is not written yet, in solution.py."""
    source = f'{imports}{signature}\n    """{doc}"""\n    {STUB}\n'
    check = f"from solution import {name}\n" + "\n".join(f"assert {t}, {t!r}" for t in tests) + "\n"
    prompt = (f"solution.py has a function `{name}` whose body is not written yet. Implement it so that "
              "it does what its docstring says. Edit solution.py in place and keep the function's name "
              "and signature.")
    return {"name": name, "files": {"solution.py": source}, "prompt": prompt,
            "target": "solution.py", "check": check}


TASKS = [
    function_task(
        "slugify", "def slugify(text: str) -> str:",
        "Lower-case text, turn every run of characters that are not letters or digits into one '-',\n"
        "    and strip '-' from both ends.\n    >>> slugify('Hello, World!')\n    'hello-world'\n    ",
        ["slugify('Hello, World!') == 'hello-world'", "slugify('  A--b  c ') == 'a-b-c'",
         "slugify('') == ''", "slugify('Rust 2024 edition') == 'rust-2024-edition'"]),
    function_task(
        "roman_to_int", "def roman_to_int(s: str) -> int:",
        "Convert a Roman numeral (I, V, X, L, C, D, M, with subtractive pairs like IV and CM)\n"
        "    to an integer.\n    >>> roman_to_int('XIV')\n    14\n    ",
        ["roman_to_int('III') == 3", "roman_to_int('XIV') == 14", "roman_to_int('MCMXCIV') == 1994",
         "roman_to_int('XL') == 40"]),
    function_task(
        "merge_intervals", "def merge_intervals(intervals: List[Tuple[int, int]]) -> List[Tuple[int, int]]:",
        "Merge overlapping or touching closed intervals and return them sorted by start.\n"
        "    >>> merge_intervals([(5, 6), (1, 3), (2, 4)])\n    [(1, 4), (5, 6)]\n    ",
        ["merge_intervals([(5, 6), (1, 3), (2, 4)]) == [(1, 4), (5, 6)]", "merge_intervals([]) == []",
         "merge_intervals([(1, 2), (2, 3)]) == [(1, 3)]", "merge_intervals([(1, 10), (2, 3)]) == [(1, 10)]"],
        imports="from typing import List, Tuple\n\n\n"),
    function_task(
        "word_count", "def word_count(text: str) -> Dict[str, int]:",
        "Count the words of text, case-insensitively; a word is a run of letters.\n"
        "    >>> word_count('The cat and the hat.')\n    {'the': 2, 'cat': 1, 'and': 1, 'hat': 1}\n    ",
        ["word_count('The cat and the hat.') == {'the': 2, 'cat': 1, 'and': 1, 'hat': 1}",
         "word_count('') == {}", "word_count('Go, go GO!') == {'go': 3}"],
        imports="from typing import Dict\n\n\n"),
    function_task(
        "is_balanced", "def is_balanced(s: str) -> bool:",
        "Whether every bracket in s ((), [] and {}) is closed in the right order; other\n"
        "    characters are ignored.\n    >>> is_balanced('a(b[c]{d})')\n    True\n    >>> is_balanced('(]')\n    False\n    ",
        ["is_balanced('a(b[c]{d})')", "not is_balanced('(]')", "is_balanced('')", "not is_balanced('((')",
         "not is_balanced(')(')"]),
    function_task(
        "flatten", "def flatten(items: list) -> list:",
        "Flatten nested lists into one list, keeping the order.\n"
        "    >>> flatten([1, [2, [3, 4]], 5])\n    [1, 2, 3, 4, 5]\n    ",
        ["flatten([1, [2, [3, 4]], 5]) == [1, 2, 3, 4, 5]", "flatten([]) == []", "flatten([[[]]]) == []",
         "flatten(['a', ['b']]) == ['a', 'b']"]),
    function_task(
        "run_length", "def run_length(s: str) -> str:",
        "Encode s as each run of one character followed by the run's length.\n"
        "    >>> run_length('aaabcc')\n    'a3b1c2'\n    ",
        ["run_length('aaabcc') == 'a3b1c2'", "run_length('') == ''", "run_length('z') == 'z1'",
         "run_length('aaaaaaaaaaaa') == 'a12'"]),
    function_task(
        "chunks", "def chunks(items: list, size: int) -> list:",
        "Split items into lists of size items each; the last one may be shorter.\n"
        "    >>> chunks([1, 2, 3, 4, 5], 2)\n    [[1, 2], [3, 4], [5]]\n    ",
        ["chunks([1, 2, 3, 4, 5], 2) == [[1, 2], [3, 4], [5]]", "chunks([], 3) == []",
         "chunks([1, 2], 5) == [[1, 2]]"]),
    function_task(
        "median", "def median(values: List[float]) -> float:",
        "The median of a non-empty list: the middle value once sorted, or the mean of the two\n"
        "    middle values when the count is even.\n    >>> median([3, 1, 2])\n    2\n    ",
        ["median([3, 1, 2]) == 2", "median([4, 1, 3, 2]) == 2.5", "median([7]) == 7"],
        imports="from typing import List\n\n\n"),
    function_task(
        "caesar", "def caesar(text: str, shift: int) -> str:",
        "Shift each ASCII letter of text by shift places in the alphabet, wrapping around and\n"
        "    keeping its case; other characters stay.\n    >>> caesar('Hello, xyz', 3)\n    'Khoor, abc'\n    ",
        ["caesar('Hello, xyz', 3) == 'Khoor, abc'", "caesar('abc', -1) == 'zab'", "caesar('', 5) == ''",
         "caesar('Zz', 27) == 'Aa'"]),
    {
        "name": "fix_mean",
        "files": {
            "stats.py": "def mean(values):\n    \"\"\"The arithmetic mean of a non-empty list.\"\"\"\n"
                        "    return sum(values) / (len(values) - 1)\n\n\n"
                        "def spread(values):\n    \"\"\"The largest value minus the smallest.\"\"\"\n"
                        "    return max(values) - min(values)\n",
            "test_stats.py": "from stats import mean, spread\n\n"
                             "assert mean([2, 4, 6]) == 4, mean([2, 4, 6])\nassert spread([3, 9, 1]) == 8\n"
                             "print('ok')\n",
        },
        "prompt": "`python3 test_stats.py` fails. Find the bug in stats.py and fix it.",
        "target": "stats.py",
        "check": "from stats import mean, spread\nassert mean([2, 4, 6]) == 4\nassert mean([5]) == 5\n"
                 "assert spread([3, 9, 1]) == 8\n",
    },
    {
        "name": "start_command",
        "files": {"README.md": "# Shop\n\nA small web shop.\n\n## Develop\n\nInstall with `npm install`.\n"
                               "Start with: npm run dev\n\nThe shop listens on port 5173.\n"},
        "prompt": "Read README.md and tell me the start command.",
        "target": None,
        "check": "import pathlib\nanswer = pathlib.Path('.answer').read_text()\nassert 'npm run dev' in answer, answer\n"
                 "assert 'Start with: npm run dev' in pathlib.Path('README.md').read_text()\n",
    },
]
