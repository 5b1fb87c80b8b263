# Copyright 2026 the semif-shadow authors. Licensed under the Apache License 2.0.
"""Scorer backends behind one interface (`base.Backend`): local, semif_http, sagemaker, chat."""
