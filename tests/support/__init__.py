"""Test helpers shared across the suite: schema validators for everything the program renders."""
