/// The optimiser's pure half: the plan's problem, its solver and its inputs (docs/optimiser.md).
public enum Planning {}
