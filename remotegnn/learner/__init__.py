"""The learner's side of the data layer, in stages: receive a batch's frame (``receive``), assemble
it in pinned host memory and feed it to the device, where the hottest rows already are
(``staging``, ``device_cache``, ``feed``), and build the PyG batch (``batch``). The loaders
(``remotegnn.loader``, ``remotegnn.link_loader``) are thin layers over these."""
