-- the connection's memory limit (runner.connect: PIPELINES_MEMORY_LIMIT, 2GB), and no SQL here: the package's model
set memory_limit = '2GB'
