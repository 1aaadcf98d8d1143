"""Tests of images: download, the vision model and its cache, multimodal input, failures."""
