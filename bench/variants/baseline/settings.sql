-- a fixed memory limit (2GB, whatever PIPELINES_MEMORY_LIMIT's default), and no SQL here: the package's models
set memory_limit = '2GB'
