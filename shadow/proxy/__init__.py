"""Proxy mode: a byte-for-byte relay in front of the production router; the mirror watches from the side.

    framing.py     follows HTTP/1.1 bytes to find each message (watches, never writes)
    held.py        the relay-wide budget of bytes held for mirroring, and each connection's charges
    states.py      a connection's state (phase and the facts that steer it), its events, the table of moves
    hooks.py       what a connection and its server see of each other; the path that keys a route
    connection.py  one client connection and its upstream connection: relay bytes, frame a copy
    sides.py       the two asyncio protocols of a connection, forwarding events to it
    relay.py       the relay server (`ProxyServer`), its config and the hooks it reports to
    channel.py     the hand-off channel's frames, and the relay's hooks that write them
    main.py        the relay process's entry point (``python -I``, minimal environment, cwd ``/``)

Only what runs in the relay process lives here. The relay process loads these modules and the error
trees only: no catalog, mirror or record store, and no secret. The sidecar's half of proxy mode (the
supervisor that runs this process, and the extraction of decisions from what it hands over) is
`shadow.intake`.
"""
