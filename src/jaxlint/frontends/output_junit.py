"""The JUnit XML report, which CI servers (GitLab's test reports, Jenkins, Azure Pipelines) show as
test results.

One test suite per file checked, so that the results read as a tree of files: each finding is a
failed test case named by its code and position, and a file without findings is one test case
that passed. The suite's `name` is the path; the test cases' `classname` is the path as a dotted
name without its suffix (`pkg/train.py` → `pkg.train`), which Jenkins shows as package and class;
each test case also carries the `file` and `line` attributes that GitLab and Jenkins link with.

XML 1.0 cannot hold most control characters at all, not even escaped, and a file name that is
not valid UTF-8 reaches here with its bytes as lone surrogates: both are replaced by visible
characters, so that the report stays well-formed whatever the paths and messages hold.
"""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Callable, Sequence

from ..model.finding import Finding

#: what XML 1.0 forbids (C0 controls but tab, line feed and carriage return; U+FFFE, U+FFFF), lone
#: surrogates, and DEL and the C1 controls, which it allows but which disturb whatever shows them
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


def _xml_text(text: str) -> str:
    def visible(match: re.Match) -> str:
        code = ord(match.group())
        if code < 0x20:
            return chr(0x2400 + code)  # its Unicode control picture
        if code == 0x7F:
            return "\u2421"
        return "\ufffd"

    return _NOT_XML.sub(visible, text)


def _class_name(path: str) -> str:
    stem = re.sub(r"\.(?:py|pyi|ipynb)$", "", path.replace("\\", "/"))
    return ".".join(part for part in stem.split("/") if part not in ("", "."))


def render_junit(findings: Sequence[Finding], files: Sequence[str], text_parts: Callable[[Finding], tuple[str, str]],
                 via_line: Callable[[Finding], str]) -> str:
    """The report: `files` are the paths checked (a file with findings need not be among them);
    `text_parts` gives a finding's `path:line:col` and message as the concise format writes them,
    `via_line` the line that says where the tracing comes from."""
    by_path: dict[str, list[Finding]] = {path: [] for path in files}
    for finding in findings:
        by_path.setdefault(finding.path, []).append(finding)
    root = ET.Element("testsuites", name="jaxlint", tests=str(sum(max(len(f), 1) for f in by_path.values())),
                      failures=str(len(findings)), errors="0")
    for path, found in by_path.items():
        suite = ET.SubElement(root, "testsuite", name=_xml_text(path), tests=str(max(len(found), 1)),
                              failures=str(len(found)), errors="0", skipped="0")
        class_name = _xml_text(_class_name(path))
        if not found:
            ET.SubElement(suite, "testcase", name="no findings", classname=class_name, file=_xml_text(path))
        for finding in found:
            suite.append(_test_case(finding, class_name, text_parts, via_line))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _test_case(finding: Finding, class_name: str, text_parts: Callable[[Finding], tuple[str, str]],
               via_line: Callable[[Finding], str]) -> ET.Element:
    where = f"line {finding.start.line}, column {finding.start.column}"
    if finding.cell is not None:
        where = f"cell {finding.cell + 1}, {where}"
    case = ET.Element("testcase", name=_xml_text(f"{finding.code} {finding.name} ({where})"), classname=class_name,
                      file=_xml_text(finding.path))
    if finding.cell is None:  # a notebook's lines are those of its cells, not of the file
        case.set("line", str(finding.start.line))
    position, text = text_parts(finding)
    failure = ET.SubElement(case, "failure", message=_xml_text(f"{finding.code} {text}"),
                            type=_xml_text(f"{finding.code} {finding.name} ({finding.severity.value})"))
    details = f"{position}: {finding.code} {text}"
    if finding.message != finding.parts.headline:
        details += "\n" + finding.message
    via = via_line(finding)
    if via:
        details += "\n" + via.strip()
    failure.text = _xml_text(details)
    return case
