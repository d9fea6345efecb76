"""Frozen features of vision (and text) models given as registry entries: where a model comes from (``sources``:
torchvision, timm, open_clip, transformers, custom; the ``model source`` kind), what to take from it (``entries``:
the layer, the embedding strategy, the preprocessing), the forward pass with hooks (``models``) and the architectures
built without a library (``zoo``). Re-Align (``modelseek.align``) and Subtask B's styles (``modelseek.style``) both
read their models through it.
"""
