# make install [PREFIX=/usr/local] [DESTDIR=]: the runtime library, the tools, the docs and the
# benchmark profiles (share/usbyte/profiles), laid out so that the installed usbyte-run and
# usbyte-doctor find ../lib/libusbyte.so beside them, with the shared libraries they need that a
# node may lack (jansson, libelf: mk/bundle.sh) in the private lib/usbyte/, where their RUNPATH
# finds them;
# make uninstall removes exactly those files (same PREFIX and DESTDIR);
# make dist: $(BUILD)/usbyte-VERSION-ARCH.tar.gz, the installed tree under usbyte-VERSION/, to
# unpack anywhere (everything in it finds the rest relative to itself).
PREFIX ?= /usr/local
DESTDIR ?=
INSTALL_LIBDIR := $(DESTDIR)$(PREFIX)/lib
INSTALL_PRIVDIR := $(INSTALL_LIBDIR)/usbyte
INSTALL_BINDIR := $(DESTDIR)$(PREFIX)/bin
INSTALL_DOCDIR := $(DESTDIR)$(PREFIX)/share/doc/usbyte
INSTALL_TOOLS := usbyte-run usbyte-report usbyte-doctor usbyte-sim
INSTALL_DOCS := README.md $(sort $(wildcard docs/*.md))
INSTALL_PROFDIR := $(DESTDIR)$(PREFIX)/share/usbyte/profiles
INSTALL_PROFILES := $(sort $(wildcard data/profiles/*.json)) data/profiles/README.md
# The ELF files installed, whose needs are bundled.
INSTALL_ELF := $(BUILD)/libusbyte.so $(addprefix $(BUILD)/,$(filter-out usbyte-run,$(INSTALL_TOOLS)))

.PHONY: install uninstall dist
install: $(BUILD)/libusbyte.so $(addprefix $(BUILD)/,$(INSTALL_TOOLS))
	install -d $(INSTALL_LIBDIR) $(INSTALL_BINDIR) $(INSTALL_DOCDIR)
	install -m 0755 $(BUILD)/libusbyte.so $(INSTALL_LIBDIR)/libusbyte.so
	install -m 0755 $(addprefix $(BUILD)/,$(INSTALL_TOOLS)) $(INSTALL_BINDIR)/
	install -m 0644 $(INSTALL_DOCS) $(INSTALL_DOCDIR)/
	install -d $(INSTALL_PROFDIR)
	install -m 0644 $(INSTALL_PROFILES) $(INSTALL_PROFDIR)/
	mk/bundle.sh $(INSTALL_PRIVDIR) $(INSTALL_ELF)

uninstall:
	rm -f $(INSTALL_LIBDIR)/libusbyte.so $(addprefix $(INSTALL_BINDIR)/,$(INSTALL_TOOLS)) \
		$(addprefix $(INSTALL_DOCDIR)/,$(notdir $(INSTALL_DOCS))) \
		$(addprefix $(INSTALL_PRIVDIR)/,$(shell mk/bundle.sh --list $(wildcard $(INSTALL_ELF))))
	rmdir $(INSTALL_DOCDIR) $(INSTALL_PRIVDIR) 2>/dev/null || true
	rm -f $(addprefix $(INSTALL_PROFDIR)/,$(notdir $(INSTALL_PROFILES)))
	rmdir $(INSTALL_PROFDIR) $(dir $(INSTALL_PROFDIR)) 2>/dev/null || true

# The version the runtime reports (USBYTE_VERSION in its sources) names the tarball.
USBYTE_VERSION := $(or $(shell sed -n 's/^\#define USBYTE_VERSION "\(.*\)"/\1/p' $(wildcard interpose/*.c interpose/*.h include/usbyte/*.h) | head -1),dev)
DIST_NAME := usbyte-$(USBYTE_VERSION)
DIST_TAR := $(BUILD)/$(DIST_NAME)-$(shell uname -m).tar.gz
dist:
	rm -rf $(BUILD)/dist && $(MAKE) --no-print-directory install DESTDIR=$(abspath $(BUILD)/dist) PREFIX=/$(DIST_NAME)
	tar -C $(BUILD)/dist -czf $(DIST_TAR) --owner=0 --group=0 $(DIST_NAME)
	@echo "dist: $(DIST_TAR)"

ifneq ($(wildcard interpose/module.mk),)
INTEGRATION_TESTS += tests/integration/tools_install.sh
endif
