libdevice = None
