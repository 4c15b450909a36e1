"""Builders and fakes the meta tests share: fake gates and runs, report rows and records, small source trees
and team programs. A test module imports them from here, never from another test module."""
