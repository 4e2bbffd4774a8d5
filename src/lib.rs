//! Test-only root package: the integration and property tests live in `tests/`.
