"""The server's room: the one model this server holds and who may load what (server, holding, access), each request
checked (requests), priced and held to its time (budget, threads), answered once per question (questions) or waiting
in the one line (line), the classes and the visitors' stores, the shelf of runs kept for links, ZeroGPU's slots
(space) and the sweep the page asks for (tune_server)."""
