"""What goclaw reads before importing the plugin: the built-in it takes the place of. Installed,
it switches ``goclaw.workers.dreaming`` off in every workspace; disabling ``reverie`` switches
the built-in back on."""

REPLACES = ("goclaw.workers.dreaming",)
