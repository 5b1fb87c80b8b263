"""The SemIf scorer: option probabilities for a fixed-choice decision, scored with llama.cpp.

Layout:
    prompt.py      the versioned prompt builder (static prefix first, state last)
    runtime.py     the thin layer over llama.cpp's low-level C API (context, batches, KV memory)
    engine.py      the scoring algorithm: canonical segments, prefix cache, option branching
    respond.py     normalization, softmax and the SemIf response (`contracts.semif`)
    identity.py    the pinned model identity (GGUF sha256, runtime, device, settings)
    model_files.py where the GGUF comes from (a path, SM_MODEL_DIR, or the embedded default)
    segments.py    joint tokenization and the canonical segments
    crossbatch.py  opt-in cross-request batching
    greedy.py      greedy generation for chat bodies
    reference.py   slow references (tests' exactness reference, the bench's brute force)
    settings.py    SCORER_* settings
    cli.py         `semif-shadow score` and `semif-shadow model`
    server/        the SageMaker-compatible HTTP server

The SemIf request and response models live in ``contracts.semif`` (shared with the sidecar).
"""

