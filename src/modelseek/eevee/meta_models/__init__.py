"""EEVEE meta-models, one per module: each registers a :class:`~modelseek.eevee.models.MetaModel` with
:func:`~modelseek.eevee.models.register_meta_model` (the registry imports every module here on first use)."""
