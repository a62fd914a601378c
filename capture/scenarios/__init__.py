"""The scenario library: named, few-second experiments, each labelled with the causes it should produce."""
