"""Proxy mode: a byte-for-byte relay in front of the production router; the mirror watches from the side.

    framing.py     follows HTTP/1.1 bytes to find each message (watches, never writes)
    connection.py  one client connection and its upstream connection: relay bytes, frame a copy
    relay.py       the relay server (`ProxyServer`), its config and the hooks it reports to
    channel.py     the hand-off channel's frames, and the relay's hooks that write them
    main.py        the relay process's entry point (``python -I``, minimal environment, cwd ``/``)
    supervisor.py  in the sidecar: binds the port, runs and restarts the relay process, reads the channel
    extract.py     in the sidecar: decisions and outcomes extracted from finished exchanges

The relay process loads framing, connection, relay, channel, main and errors only: no catalog, mirror or
record store, and no secret.
"""
