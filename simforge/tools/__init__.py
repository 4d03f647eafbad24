"""Tools: ToolSpec, ``@tool``, generated CRUD tools, packs and catalogs, OpenAI export."""

from simforge.tools.context import ToolContext
from simforge.tools.crud import crud_tools
from simforge.tools.errors import ToolArgumentError, ToolDefinitionError, ToolError, ToolNotFound
from simforge.tools.pack import Pack, ToolCatalog
from simforge.tools.spec import Constant, Empirical, ErrorModel, LogNormal, ToolSpec, Uniform
from simforge.tools.tool import Tool, tool

__all__ = [
    "Constant",
    "Empirical",
    "ErrorModel",
    "LogNormal",
    "Pack",
    "Tool",
    "ToolArgumentError",
    "ToolCatalog",
    "ToolContext",
    "ToolDefinitionError",
    "ToolError",
    "ToolNotFound",
    "ToolSpec",
    "Uniform",
    "crud_tools",
    "tool",
]
