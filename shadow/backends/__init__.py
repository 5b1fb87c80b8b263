"""Scorer backends behind one interface (`base.Backend`): local, semif_http, sagemaker, chat."""
