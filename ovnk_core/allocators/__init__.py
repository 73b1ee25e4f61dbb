"""Allocators: pure bookkeeping of IDs, subnets and addresses, rebuilt from annotations."""
