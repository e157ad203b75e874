"""Reading runs for people: :mod:`~agents.reports.curves` (learning-curve data of a run folder) and
:mod:`~agents.reports.plotting` (the matplotlib figures a run writes and the viewer shows)."""
