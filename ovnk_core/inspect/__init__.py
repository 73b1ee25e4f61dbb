"""Read-only views of what ovnk rendered, for people (``ovnk show ...``)."""
