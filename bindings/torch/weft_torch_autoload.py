"""torch 2.x loads this at `import torch` (entry point group "torch.backends"), so that
init_process_group("weft") works without `import weft_torch`. TORCH_DEVICE_BACKEND_AUTOLOAD=0
turns torch's autoload off."""


def register():
    # torch calls this while `import torch` is finishing; a backend that cannot load must not
    # make torch itself fail to import, so the reason is a warning and `import weft_torch`
    # raises it again where the user asks for the backend.
    try:
        import weft_torch  # noqa: F401  (registers the backend)
    except Exception as e:  # pragma: no cover - depends on the installation
        import warnings

        warnings.warn(f"weft_torch: the 'weft' backend was not registered at torch's import: {e}", RuntimeWarning)
