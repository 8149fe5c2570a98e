"""The lines a checker's self-test fixture marks as problems: `// reported` once, `// reported twice`
twice. check_layers.py and check_sql.py compare what they find in their fixtures with these."""
import os


def marked_lines(fixture, name=lambda rel: rel):
    """`name(path relative to the fixture):line` for each marked line, as many times as marked."""
    expected = []
    for root, _, names in os.walk(fixture):
        for file_name in names:
            path = os.path.join(root, file_name)
            with open(path, encoding="utf-8") as f:
                for number, line in enumerate(f, 1):
                    times = 2 if "// reported twice" in line else 1 if "// reported" in line else 0
                    expected += [f"{name(os.path.relpath(path, fixture))}:{number}"] * times
    return expected
