"""What a command says on a terminal: whether a stream is one, and a duration in words."""


def is_terminal(stream) -> bool:
    """Whether ``stream`` is a terminal (not a file, a pipe, a closed stream)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def duration(seconds: float) -> str:
    """``3725`` -> ``"1 h 2 min"``: two units at most, enough for an estimate."""
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds} s"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours} h {minutes} min"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h"
