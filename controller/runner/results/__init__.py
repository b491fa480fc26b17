"""A run's results: the folder writer, the summary, the terminal table and the plots."""

from controller.runner.results.summary import Cycle, SummaryRow, summarise, summary_csv
from controller.runner.results.table import format_table
from controller.runner.results.writer import ResultsWriter, collect_versions, read_records

__all__ = [
    "Cycle",
    "ResultsWriter",
    "SummaryRow",
    "collect_versions",
    "format_table",
    "read_records",
    "summarise",
    "summary_csv",
]
