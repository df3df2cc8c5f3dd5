"""The learner's side of the data layer, in stages: what a loader serves (``inputs``); receiving a
batch's frame (``receive``); assembling it in pinned host memory and feeding it to the device,
where the hottest rows already are (``staging``, ``device_cache``, ``feed``); and building the PyG
batch (``batch``). The loaders (``remotegnn.loader``, ``remotegnn.link_loader``) are thin layers
over these."""
