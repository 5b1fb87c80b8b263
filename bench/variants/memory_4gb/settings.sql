-- DuckDB's memory limit doubled (int_decisions: is the 2 GB limit costing work?)
set memory_limit = '4GB'
