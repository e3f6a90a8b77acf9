"""tree-sitter-bash node types as the walk sorts them, and small helpers over nodes.

flatten(list_node, "list")   # the statements of an &&/|| chain, in order
"""

from __future__ import annotations

from tree_sitter import Node

from gateway.effects.shell.words import names, text

__all__ = ["INPUT_KINDS", "REDIRECT_TYPES", "STATEMENT_TYPES", "VALUE_TYPES", "error_snippet", "flatten", "gaps"]

STATEMENT_TYPES = names(
    "program list pipeline command redirected_statement subshell compound_statement if_statement elif_clause "
    "else_clause while_statement for_statement c_style_for_statement case_statement case_item do_group "
    "negated_command function_definition variable_assignment variable_assignments declaration_command "
    "unset_command test_command comment file_redirect heredoc_redirect herestring_redirect ERROR"
)
# Node types that are values, not statements: only the substitutions inside them can run anything.
VALUE_TYPES = names(
    "word number string raw_string ansi_c_string translated_string concatenation simple_expansion expansion "
    "arithmetic_expansion command_substitution process_substitution brace_expression extglob_pattern regex "
    "variable_name special_variable_name binary_expression unary_expression postfix_expression "
    "parenthesized_expression ternary_expression test_operator array subscript"
)
REDIRECT_TYPES = names("file_redirect heredoc_redirect herestring_redirect")
INPUT_KINDS = names("in heredoc herestring")


def flatten(node: Node, kind: str) -> list[Node]:
    """The members of a nested ``kind`` node, in order: the statements of an &&/|| list (lists nest to the
    left, ((a && b) || c)) or the commands of a pipeline (tree-sitter nests ``a | b | c``, and heredoc
    tails). A long chain is deep, so this does not recurse."""
    members: list[Node] = []
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == kind:
            stack.extend(reversed([c for c in current.children if c.is_named and c.type != "comment"]))
        else:
            members.append(current)
    return members


def gaps(node: Node) -> str:
    """The text of ``node`` outside its named children: what the parser left as plain text."""
    source = node.text or b""
    base = node.start_byte
    pieces: list[bytes] = []
    pos = 0
    for child in node.named_children:
        pieces.append(source[pos : child.start_byte - base])
        pos = child.end_byte - base
    pieces.append(source[pos:])
    return b"".join(pieces).decode("utf-8", errors="replace")


def error_snippet(root: Node) -> str:
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "ERROR" or node.is_missing:
            return text(node) or text(node.parent or root)[:60] or "end of input"
        stack.extend(reversed(node.children))
    return text(root)[:60]
