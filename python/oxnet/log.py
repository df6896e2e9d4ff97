"""Logging helpers (MXNet's ``mx.log``): ``get_logger`` makes a logger with MXNet's
compact format (level letter, time, file:line)."""

import logging
import warnings

CRITICAL = logging.CRITICAL
ERROR = logging.ERROR
WARNING = logging.WARNING
INFO = logging.INFO
DEBUG = logging.DEBUG
NOTSET = logging.NOTSET

__all__ = ["CRITICAL", "ERROR", "WARNING", "INFO", "DEBUG", "NOTSET", "get_logger",
           "getLogger"]

_LETTERS = {logging.CRITICAL: "C", logging.ERROR: "E", logging.WARNING: "W",
            logging.INFO: "I", logging.DEBUG: "D"}


class _Formatter(logging.Formatter):
    """``<letter><mmdd hh:mm:ss> file:line] message``."""

    def __init__(self):
        super().__init__(datefmt="%m%d %H:%M:%S")

    def format(self, record):
        self._style._fmt = _LETTERS.get(record.levelno, "U") + \
            "%(asctime)s %(process)d %(pathname)s:%(funcName)s:%(lineno)d] %(message)s"
        return super().format(record)


def getLogger(name=None, filename=None, filemode=None, level=WARNING):
    """[Deprecated: use ``get_logger``]."""
    warnings.warn("getLogger is deprecated, Use get_logger instead.", DeprecationWarning,
                  stacklevel=2)
    return get_logger(name, filename, filemode, level)


def get_logger(name=None, filename=None, filemode=None, level=WARNING):
    """A logger named ``name`` (the root logger when None) writing to ``filename`` (mode
    ``filemode``, default 'a') or to stderr, at ``level``; configured once per name."""
    logger = logging.getLogger(name)
    if name is not None and not getattr(logger, "_init_done", None):
        logger._init_done = True
        if filename:
            handler = logging.FileHandler(filename, filemode or "a")
        else:
            handler = logging.StreamHandler()
        handler.setFormatter(_Formatter())
        logger.addHandler(handler)
        logger.setLevel(level)
    return logger
