def plot_network(*a, **k): pass
