from cyc import model


def dense(x):
    return model.activation(2.0 * x)


def plain(x):
    return model.identity(2.0 * x)
