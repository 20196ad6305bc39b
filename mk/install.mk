# make install [PREFIX=/usr/local] [DESTDIR=]: the runtime library, the tools, the docs and the
# benchmark profiles (share/usbyte/profiles), laid out so that the installed usbyte-run and
# usbyte-doctor find ../lib/libusbyte.so beside them;
# make uninstall removes exactly those files (same PREFIX and DESTDIR).
PREFIX ?= /usr/local
DESTDIR ?=
INSTALL_LIBDIR := $(DESTDIR)$(PREFIX)/lib
INSTALL_BINDIR := $(DESTDIR)$(PREFIX)/bin
INSTALL_DOCDIR := $(DESTDIR)$(PREFIX)/share/doc/usbyte
INSTALL_TOOLS := usbyte-run usbyte-report usbyte-doctor usbyte-sim
INSTALL_DOCS := README.md $(sort $(wildcard docs/*.md))
INSTALL_PROFDIR := $(DESTDIR)$(PREFIX)/share/usbyte/profiles
INSTALL_PROFILES := $(sort $(wildcard data/profiles/*.json)) data/profiles/README.md

.PHONY: install uninstall
install: $(BUILD)/libusbyte.so $(addprefix $(BUILD)/,$(INSTALL_TOOLS))
	install -d $(INSTALL_LIBDIR) $(INSTALL_BINDIR) $(INSTALL_DOCDIR)
	install -m 0755 $(BUILD)/libusbyte.so $(INSTALL_LIBDIR)/libusbyte.so
	install -m 0755 $(addprefix $(BUILD)/,$(INSTALL_TOOLS)) $(INSTALL_BINDIR)/
	install -m 0644 $(INSTALL_DOCS) $(INSTALL_DOCDIR)/
	install -d $(INSTALL_PROFDIR)
	install -m 0644 $(INSTALL_PROFILES) $(INSTALL_PROFDIR)/

uninstall:
	rm -f $(INSTALL_LIBDIR)/libusbyte.so $(addprefix $(INSTALL_BINDIR)/,$(INSTALL_TOOLS)) \
		$(addprefix $(INSTALL_DOCDIR)/,$(notdir $(INSTALL_DOCS)))
	rmdir $(INSTALL_DOCDIR) 2>/dev/null || true
	rm -f $(addprefix $(INSTALL_PROFDIR)/,$(notdir $(INSTALL_PROFILES)))
	rmdir $(INSTALL_PROFDIR) $(dir $(INSTALL_PROFDIR)) 2>/dev/null || true

ifneq ($(wildcard interpose/module.mk),)
INTEGRATION_TESTS += tests/integration/tools_install.sh
endif
