"""Networks: what a NAD's CNI config means (``NetInfo``) and how it is parsed."""
