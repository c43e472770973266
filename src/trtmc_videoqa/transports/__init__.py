"""The video transports: the one table of how a request carries its clip (`table`), and what carries it by each
(`clips`: the clip server's routes and URLs, a chat body's video part, AIPerf's rows), shared by the clip server, the
run's owner and the stages."""
