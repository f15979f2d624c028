"""A tiny DOM for in-process page tests: ``Page(html).root`` is a tree of ``Node``s; text comes back
unescaped, as a browser shows it, so a test can compare it with the stored text exactly."""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Iterator, Optional

VOID = {"meta", "link", "br", "input", "img", "hr"}


class Node:
    def __init__(self, tag: str, attrs: dict[str, Optional[str]], parent: Optional["Node"]) -> None:
        self.tag, self.attrs, self.parent, self.children = tag, attrs, parent, []

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def walk(self) -> Iterator["Node"]:
        for c in self.children:
            if isinstance(c, Node):
                yield c
                yield from c.walk()

    def all(self, tag: str = "", *, id: str = "", cls: str = "", **attrs: str) -> list["Node"]:
        return [n for n in self.walk() if (not tag or n.tag == tag) and (not id or n.attrs.get("id") == id)
                and (not cls or cls in (n.attrs.get("class") or "").split())
                and all(n.attrs.get(k.replace("_", "-")) == v for k, v in attrs.items())]

    def one(self, tag: str = "", **kw: str) -> "Node":
        found = self.all(tag, **kw)
        assert len(found) == 1, f"expected one {tag} {kw}, found {len(found)}"
        return found[0]


class Page(HTMLParser):
    """A tiny DOM of an HTML answer; text comes back unescaped, as a browser shows it."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.root = self.at = Node("#root", {}, None)
        self.feed(html)
        self.close()

    def handle_starttag(self, tag: str, attrs: list) -> None:
        node = Node(tag, dict(attrs), self.at)
        self.at.children.append(node)
        if tag not in VOID:
            self.at = node

    def handle_startendtag(self, tag: str, attrs: list) -> None:
        self.at.children.append(Node(tag, dict(attrs), self.at))

    def handle_endtag(self, tag: str) -> None:
        node = self.at
        while node is not self.root and node.tag != tag:
            node = node.parent
        assert node is not self.root, f"</{tag}> closes nothing"
        self.at = node.parent

    def handle_data(self, data: str) -> None:
        self.at.children.append(data)
